// Model descriptions for the layer planner (docs/MODELS.md): a list of layers
// with their parameter counts, activations and FLOPs per sample. Where a layer
// gives its shape, every derived number is recomputed from it and must agree
// with the file, so a typo in a hand-written figure cannot mislead a plan.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace collkit {

enum class LayerKind : std::uint8_t {
  conv2d,
  linear,
  embedding,
  norm,
  attention,
  mlp,
  transformer_block,
  bottleneck,
};

std::string_view to_string(LayerKind k);

// True for the kinds Megatron splits into column/row-parallel pairs.
bool supports_tensor_parallel(LayerKind k);

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::linear;
  std::int64_t params = 0;   // of one instance
  std::int64_t act_in = 0;   // elements per sample entering one instance
  std::int64_t act_out = 0;  // elements per sample leaving one instance
  std::int64_t flops = 0;    // forward FLOPs per sample of one instance
  std::int64_t repeat = 1;   // identical instances in a row
  // Megatron all_reduces per micro-batch (forward + backward) of one instance
  // under tensor parallelism: 2 per attention or MLP, 4 per transformer block.
  int tp_all_reduces = 0;
  // linear: in/out features (the model-parallel FC split needs them).
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  nlohmann::json shape;  // as given (null when absent)
};

struct Model {
  std::string name;
  std::string description;
  std::string file;
  std::vector<Layer> layers;
  std::int64_t total_params() const;  // counting repeats
};

// Numbers derived from a layer's shape (docs/MODELS.md gives the formulas).
struct DerivedLayer {
  std::int64_t params = 0;
  std::int64_t act_in = 0;
  std::int64_t act_out = 0;
  std::int64_t flops = 0;
};
// Throws FileError naming `where` (e.g. "alexnet.json: layers[5].shape") and
// the key at fault for a missing, unknown or out-of-range shape key.
DerivedLayer derive_layer(LayerKind kind, const nlohmann::json& shape, const std::string& where);

// Loads and validates a model file. Throws FileError naming the file and the
// field: unknown keys or kinds, negative or missing sizes, figures that
// disagree with the shape, a `params` total that disagrees with the layers.
Model load_model(const std::string& path);
Model parse_model(const std::string& text, const std::string& file);

}  // namespace collkit
