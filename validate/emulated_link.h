// --emulate-link: real bandwidth-bound links on one machine. Each worker gets its own network
// namespace, joined to a bridge in a hub namespace by a veth pair whose two ends are shaped with
// `tc tbf` to the given rate (so a worker sends and receives at RATE, like a NIC per node). The
// namespaces are deleted by the destructor, on every path out (errors and Ctrl-C included: the
// launcher destroys this before it exits). Needs root (CAP_NET_ADMIN).
#pragma once

#include <string>
#include <vector>

namespace overlapsim::real {

class EmulatedNetwork {
public:
  // Throws std::runtime_error (and leaves nothing behind) when the namespaces cannot be made.
  EmulatedNetwork(int workers, double rate_Bps);
  ~EmulatedNetwork();
  EmulatedNetwork(const EmulatedNetwork&) = delete;
  EmulatedNetwork& operator=(const EmulatedNetwork&) = delete;

  const std::string& netns(int rank) const { return namespaces_[static_cast<std::size_t>(rank)]; }
  std::string address(int rank) const; // the worker's IPv4 address inside its namespace
  double rate_Bps() const { return rate_Bps_; }

  // Deletes every namespace this object made (idempotent; safe from a signal-driven exit path).
  void cleanup() noexcept;

private:
  std::string prefix_;
  std::string hub_;
  std::vector<std::string> namespaces_;
  double rate_Bps_;
  bool hub_made_ = false;
};

// Runs a command (argv, no shell) and returns its exit status; output goes to `output`.
int run_command(const std::vector<std::string>& argv, std::string* output = nullptr);

} // namespace overlapsim::real
