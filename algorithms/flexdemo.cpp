#include "algorithms/flexdemo.h"

#include "algorithms/fsdp.h"
#include "algorithms/options.h"

namespace overlapsim {
namespace {

class FlexDemo final : public Algorithm {
public:
  FlexDemo(std::string name, FsdpOptions o) : name_(std::move(name)), o_(std::move(o)) {}
  std::string name() const override { return name_; }
  UpdateKind update_kind() const override { return UpdateKind::local; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return make_fsdp_program(w, o_);
  }

private:
  std::string name_;
  FsdpOptions o_;
};

} // namespace

std::unique_ptr<Algorithm> make_flexdemo(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, {"replicator", "compression", "chunk", "top_k", "decay", "sign",
                                     "value_dtype", "seed", "wrap", "reshard_after_forward"});
  FsdpOptions o;
  read_wrap_options(spec, opts, o);
  o.hybrid = true;
  o.replicator = replicator_config(opts, true);
  return std::make_unique<FlexDemo>(spec.name, std::move(o));
}

} // namespace overlapsim
