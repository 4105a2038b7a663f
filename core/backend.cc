#include "core/backend.h"

namespace collkit {

std::string_view to_string(Backend b) {
  switch (b) {
    case Backend::sim:
      return "sim";
    case Backend::mpi:
      return "mpi";
    case Backend::nccl:
      return "nccl";
    case Backend::cuda:
      return "cuda";
  }
  return "?";
}

}  // namespace collkit
