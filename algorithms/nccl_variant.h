// The nccl family's variants (docs/NCCL.md): the algorithms NCCL runs, one
// type for the schedules and their closed forms (algorithms/nccl*.cc),
// NCCL's cost model in the simulator (sim/nccl.h), the tuner and the
// command line. Their names ("nccl:ring": ring) are written here and only
// here: to_string prints one, parse_nccl_variant reads one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace collkit {

enum class NcclVariant : std::uint8_t {
  ring,
  tree,
  nvls,
  nvls_tree,
  collnet_direct,
  collnet_chain,
  p2p,
  pat
};

// Every variant, in the enum's order.
inline constexpr std::array<NcclVariant, 8> kNcclVariants = {NcclVariant::ring,
                                                             NcclVariant::tree,
                                                             NcclVariant::nvls,
                                                             NcclVariant::nvls_tree,
                                                             NcclVariant::collnet_direct,
                                                             NcclVariant::collnet_chain,
                                                             NcclVariant::p2p,
                                                             NcclVariant::pat};

// The name of NCCL's own choice per size ("nccl", "nccl:auto"), the nccl
// algorithms' default: not a variant of its own.
inline constexpr std::string_view kNcclAuto = "auto";

// "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain",
// "p2p", "pat".
constexpr std::string_view to_string(NcclVariant v) {
  constexpr std::array<std::string_view, kNcclVariants.size()> kNames = {
      "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "p2p", "pat"};
  return kNames[static_cast<std::size_t>(v)];
}

// The variant of that name; nullopt for any other name, "auto" included.
constexpr std::optional<NcclVariant> parse_nccl_variant(std::string_view name) {
  for (NcclVariant v : kNcclVariants)
    if (to_string(v) == name) return v;
  return std::nullopt;
}

}  // namespace collkit
