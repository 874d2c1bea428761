#include "runtime/runtime.h"

#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim {

const char* to_string(OpCategory category) {
  switch (category) {
  case OpCategory::forward:
    return "forward";
  case OpCategory::backward:
    return "backward";
  case OpCategory::optimizer:
    return "optimizer";
  case OpCategory::comm:
    return "comm";
  case OpCategory::compress:
    return "compress";
  case OpCategory::idle:
    return "idle";
  case OpCategory::copy:
    return "copy";
  }
  return "?";
}

const char* to_string(MemoryCategory category) {
  switch (category) {
  case MemoryCategory::params:
    return "params";
  case MemoryCategory::grads:
    return "grads";
  case MemoryCategory::optimizer_state:
    return "optimizer_state";
  case MemoryCategory::buffers:
    return "buffers";
  case MemoryCategory::activations:
    return "activations";
  }
  return "?";
}

} // namespace overlapsim
