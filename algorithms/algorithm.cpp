#include "algorithms/algorithm.h"

namespace overlapsim {

std::string_view to_string(UpdateKind kind) {
  switch (kind) {
  case UpdateKind::synchronous:
    return "synchronous";
  case UpdateKind::local:
    return "local";
  case UpdateKind::delayed:
    return "delayed";
  }
  return "synchronous";
}

} // namespace overlapsim
