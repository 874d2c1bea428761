#include "algorithms/flexdemo.h"

#include "algorithms/fsdp.h"
#include "algorithms/options.h"

namespace overlapsim {
namespace {

class FlexDemo final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  FlexDemo(std::string name, FsdpOptions o) : name_(std::move(name)), o_(std::move(o)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return make_fsdp_program(w, o_);
  }

private:
  std::string name_;
  FsdpOptions o_;
};

} // namespace

std::unique_ptr<Algorithm> make_flexdemo(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, flexdemo_descriptor());
  FsdpOptions o;
  read_wrap_options(spec, opts, o);
  o.hybrid = true;
  o.replicator = replicator_config(opts, true);
  return std::make_unique<FlexDemo>(spec.name, std::move(o));
}

const AlgorithmDescriptor& flexdemo_descriptor() {
  static const AlgorithmDescriptor d = [] {
    AlgorithmDescriptor f{
        "flexdemo",
        "FlexDeMo: FSDP inside a node, a replicator's compressed exchange between the nodes",
        "DeToNATION (FlexDeMo), Algorithm 1",
        UpdateKind::local,
        true,
        "#332288",
        replicator_options(true),
        make_flexdemo};
    f.options.insert(
        f.options.end(),
        {{"wrap",
          OptionType::size,
          "",
          0,
          0,
          {},
          "layers per FSDP unit (a whole number, default 1) or a size: consecutive layers until a "
          "unit holds that much"},
         {"reshard_after_forward",
          OptionType::flag,
          "true",
          0,
          0,
          {},
          "free the gathered parameters after the forward and gather them again for the "
          "backward"}});
    return f;
  }();
  return d;
}

} // namespace overlapsim
