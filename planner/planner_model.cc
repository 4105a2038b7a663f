#include "planner/planner_model.h"

#include <initializer_list>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"

namespace collkit {
namespace {

using nlohmann::json;

constexpr std::pair<LayerKind, std::string_view> kKindNames[] = {
    {LayerKind::conv2d, "conv2d"},
    {LayerKind::linear, "linear"},
    {LayerKind::embedding, "embedding"},
    {LayerKind::norm, "norm"},
    {LayerKind::attention, "attention"},
    {LayerKind::mlp, "mlp"},
    {LayerKind::transformer_block, "transformer_block"},
    {LayerKind::bottleneck, "bottleneck"},
};

std::string kind_list() {
  std::string out;
  for (const auto& [k, n] : kKindNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Reads the keys of one JSON object, each at most once, and rejects the keys
// nobody asked for, so a misspelt key fails instead of silently defaulting.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
    if (!obj_.is_object()) throw FileError(where_ + ": expected a JSON object");
  }

  bool has(const std::string& key) const { return obj_.contains(key); }

  std::int64_t integer(const std::string& key, std::int64_t min_value) {
    used_.insert(key);
    const json& v = obj_.at(key);
    if (!v.is_number_integer())
      throw FileError(where_ + "." + key + ": expected an integer, got " + v.dump());
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()})
      throw FileError(where_ + "." + key + " = " + v.dump() + ": must be < 2^63");
    const std::int64_t value = v.get<std::int64_t>();
    if (value < min_value)
      throw FileError(where_ + "." + key + " = " + std::to_string(value) +
                      ": must be >= " + std::to_string(min_value));
    return value;
  }
  std::int64_t integer(const std::string& key, std::int64_t min_value, std::int64_t dflt) {
    if (!has(key)) return dflt;
    return integer(key, min_value);
  }
  std::int64_t required(const std::string& key, std::int64_t min_value) {
    if (!has(key)) throw FileError(where_ + ": missing key '" + key + "'");
    return integer(key, min_value);
  }
  bool boolean(const std::string& key, bool dflt) {
    if (!has(key)) return dflt;
    used_.insert(key);
    if (!obj_.at(key).is_boolean())
      throw FileError(where_ + "." + key + ": expected true or false, got " + obj_.at(key).dump());
    return obj_.at(key).get<bool>();
  }
  std::string text(const std::string& key, const std::string& dflt) {
    if (!has(key)) return dflt;
    used_.insert(key);
    if (!obj_.at(key).is_string())
      throw FileError(where_ + "." + key + ": expected a string, got " + obj_.at(key).dump());
    return obj_.at(key).get<std::string>();
  }
  const json& raw(const std::string& key) {
    used_.insert(key);
    return obj_.at(key);
  }
  void finish() const {
    for (const auto& [key, value] : obj_.items())
      if (!used_.count(key)) throw FileError(where_ + ": unknown key '" + key + "'");
  }
  const std::string& where() const { return where_; }
  void set_where(std::string where) { where_ = std::move(where); }
  // Rejects keys outside `allowed` before anything else is read, so a
  // misspelt required key is reported as the unknown key it is.
  void only(std::initializer_list<const char*> allowed) const {
    for (const auto& [key, value] : obj_.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || key == a;
      if (!ok) throw FileError(where_ + ": unknown key '" + key + "'");
    }
  }

 private:
  const json& obj_;
  std::string where_;
  std::set<std::string> used_;
};

// Sizes and figures of any real model stay far below 2^63; every product and
// sum of file values goes through these, so a file with absurd sizes fails
// with a message instead of wrapping around (signed overflow is undefined
// behaviour, which the sanitizer build and the model fuzzer check).
[[noreturn]] void overflow(const std::string& where) {
  throw FileError(where + ": sizes overflow 64-bit integers");
}

std::int64_t mul(std::int64_t a, std::int64_t b, const std::string& where) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow(where);
  return r;
}

std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c, const std::string& where) {
  return mul(mul(a, b, where), c, where);
}

std::int64_t add(std::int64_t a, std::int64_t b, const std::string& where) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow(where);
  return r;
}

// Attention with grouped KV heads: Q and O are h x h, K and V h x (h kv/heads).
std::int64_t attention_params(std::int64_t h, std::int64_t heads, std::int64_t kv, bool bias,
                              const std::string& where) {
  if (h % heads != 0)
    throw FileError(where + ".hidden = " + std::to_string(h) +
                    ": not divisible by heads = " + std::to_string(heads));
  if (kv > heads || heads % kv != 0)
    throw FileError(where + ".kv_heads = " + std::to_string(kv) +
                    ": must divide heads = " + std::to_string(heads));
  const std::int64_t hkv = h / heads * kv;
  std::int64_t p = add(mul(2, h, h, where), mul(2, h, hkv, where), where);
  if (bias) p = add(p, add(mul(2, h, where), mul(2, hkv, where), where), where);
  return p;
}

std::int64_t mlp_params(std::int64_t h, std::int64_t f, bool gated, bool bias,
                        const std::string& where) {
  std::int64_t p = mul(gated ? 3 : 2, h, f, where);
  if (bias) p = add(p, add(mul(gated ? 2 : 1, f, where), h, where), where);
  return p;
}

std::int64_t norm_params(const std::string& type, std::int64_t dim, const std::string& where) {
  if (type == "layernorm" || type == "batchnorm") return mul(2, dim, where);
  if (type == "rmsnorm") return dim;
  throw FileError(where + " = '" + type + "': expected layernorm, rmsnorm or batchnorm");
}

// Spatial size after a convolution or pooling window.
std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pad,
                      const std::string& where) {
  const std::int64_t span = add(in, mul(2, pad, where), where) - k;  // in, pad, k >= 0
  if (span < 0) throw FileError(where + ": kernel larger than the padded input");
  return span / s + 1;
}

}  // namespace

std::string_view to_string(LayerKind k) {
  for (const auto& [kind, name] : kKindNames)
    if (kind == k) return name;
  return "?";
}

bool supports_tensor_parallel(LayerKind k) {
  return k == LayerKind::attention || k == LayerKind::mlp || k == LayerKind::transformer_block;
}

std::int64_t Model::total_params() const {
  std::int64_t total = 0;
  // parse_model checks that this sum fits in 64 bits.
  for (const Layer& l : layers) total += l.params * l.repeat;
  return total;
}

DerivedLayer derive_layer(LayerKind kind, const json& shape, const std::string& where) {
  Fields f(shape, where);
  DerivedLayer d;
  switch (kind) {
    case LayerKind::conv2d: {
      const std::int64_t cin = f.required("in_channels", 1);
      const std::int64_t cout = f.required("out_channels", 1);
      const std::int64_t k = f.required("kernel", 1);
      const std::int64_t s = f.integer("stride", 1, 1);
      const std::int64_t pad = f.integer("padding", 0, 0);
      const std::int64_t hw = f.required("input", 1);
      const bool bias = f.boolean("bias", true);
      const bool bn = f.boolean("batch_norm", false);
      const std::int64_t o = conv_out(hw, k, s, pad, where);
      const std::int64_t macs_per_out = mul(cin, k, k, where);
      d.params = add(mul(cout, macs_per_out, where),
                     add(bias ? cout : 0, bn ? mul(2, cout, where) : 0, where), where);
      d.act_in = mul(cin, hw, hw, where);
      d.act_out = mul(cout, o, o, where);
      d.flops = mul(2, d.act_out, macs_per_out, where);
      break;
    }
    case LayerKind::linear: {
      const std::int64_t in = f.required("in_features", 1);
      const std::int64_t out = f.required("out_features", 1);
      const std::int64_t tokens = f.integer("tokens", 1, 1);
      const bool bias = f.boolean("bias", true);
      // head: the language-model head, followed by the loss (split over the
      // vocabulary by tensor parallelism); tied: its weights are the
      // embedding's, counted there.
      const bool head = f.boolean("head", false);
      const bool tied = f.boolean("tied", false);
      if (tied && !head)
        throw FileError(where +
                        ".tied: only an LM head (\"head\": true) shares the embedding's weights");
      d.params = tied ? 0 : add(mul(in, out, where), bias ? out : 0, where);
      d.act_in = mul(tokens, in, where);
      d.act_out = mul(tokens, out, where);
      d.flops = mul(mul(2, tokens, where), mul(in, out, where), where);
      break;
    }
    case LayerKind::embedding: {
      const std::int64_t vocab = f.required("vocab", 1);
      const std::int64_t dim = f.required("dim", 1);
      const std::int64_t tokens = f.required("tokens", 1);
      const std::int64_t positions = f.integer("positions", 0, 0);
      d.params = add(mul(vocab, dim, where), mul(positions, dim, where), where);
      d.act_in = tokens;
      d.act_out = mul(tokens, dim, where);
      d.flops = 0;
      break;
    }
    case LayerKind::norm: {
      const std::int64_t dim = f.required("dim", 1);
      const std::int64_t tokens = f.integer("tokens", 1, 1);
      d.params = norm_params(f.text("type", "layernorm"), dim, where + ".type");
      d.act_in = d.act_out = mul(tokens, dim, where);
      d.flops = 0;
      break;
    }
    case LayerKind::attention:
    case LayerKind::mlp:
    case LayerKind::transformer_block: {
      const std::int64_t h = f.required("hidden", 1);
      const std::int64_t seq = f.required("seq", 1);
      const bool bias = f.boolean("bias", true);
      // How the layer trains: dropout after attention and MLP (and on the
      // attention probabilities), causal attention (flash kernels skip the
      // masked half). They change time and memory, not the figures.
      f.boolean("dropout", false);
      if (kind != LayerKind::mlp) f.boolean("causal", true);
      std::int64_t matmul = 0;  // weights used in matrix products
      std::int64_t p = 0;
      std::int64_t attn_flops = 0;
      if (kind != LayerKind::mlp) {
        const std::int64_t heads = f.required("heads", 1);
        const std::int64_t kv = f.integer("kv_heads", 1, heads);
        p = add(p, attention_params(h, heads, kv, bias, where), where);
        matmul = add(matmul, attention_params(h, heads, kv, false, where), where);
        // Q K^T and attention x V: 2 s^2 h multiply-adds per sample.
        attn_flops = mul(mul(4, seq, seq, where), h, where);
      }
      if (kind != LayerKind::attention) {
        const std::int64_t ffn = f.required("ffn", 1);
        const bool gated = f.boolean("gated", false);
        p = add(p, mlp_params(h, ffn, gated, bias, where), where);
        matmul = add(matmul, mlp_params(h, ffn, gated, false, where), where);
      }
      if (kind == LayerKind::transformer_block)
        p = add(p, mul(2, norm_params(f.text("norm", "layernorm"), h, where + ".norm"), where),
                where);
      d.params = p;
      d.act_in = d.act_out = mul(seq, h, where);
      d.flops = add(mul(2, seq, matmul, where), attn_flops, where);
      break;
    }
    case LayerKind::bottleneck: {
      // torchvision ResNet v1.5: 1x1 reduce, 3x3 (carrying the stride), 1x1
      // expand, each followed by batch norm; a 1x1 projection when downsampling.
      const std::int64_t cin = f.required("in_channels", 1);
      const std::int64_t mid = f.required("mid_channels", 1);
      const std::int64_t cout = f.required("out_channels", 1);
      const std::int64_t s = f.integer("stride", 1, 1);
      const std::int64_t hw = f.required("input", 1);
      const bool ds = f.boolean("downsample", false);
      const std::int64_t o = conv_out(hw, 3, s, 1, where);
      // p = cin mid + 2 mid + 9 mid^2 + 2 mid + mid cout + 2 cout (+ cin cout + 2 cout)
      // macs = cin mid hw^2 + (9 mid^2 + mid cout) o^2 (+ cin cout o^2)
      const std::int64_t mid_sq9 = mul(9, mid, mid, where);
      const std::int64_t mid_cout = mul(mid, cout, where);
      std::int64_t p = add(mul(cin, mid, where), mul(4, mid, where), where);
      p = add(p, add(mid_sq9, add(mid_cout, mul(2, cout, where), where), where), where);
      const std::int64_t o2 = mul(o, o, where);
      std::int64_t macs = add(mul(mul(cin, mid, where), mul(hw, hw, where), where),
                              mul(add(mid_sq9, mid_cout, where), o2, where), where);
      if (ds) {
        const std::int64_t cin_cout = mul(cin, cout, where);
        p = add(p, add(cin_cout, mul(2, cout, where), where), where);
        macs = add(macs, mul(cin_cout, o2, where), where);
      }
      d.params = p;
      d.act_in = mul(cin, hw, hw, where);
      d.act_out = mul(cout, o, o, where);
      d.flops = mul(2, macs, where);
      break;
    }
  }
  f.finish();
  return d;
}

Model parse_model(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = parse_json_unique<json>(text);
  } catch (const DuplicateJsonKey& e) {
    throw FileError(file + ": " + e.what() + ": JSON keeps one of the two silently; give it once");
  } catch (const json::exception& e) {
    // parse_error, or out_of_range for a number a double cannot hold (1e999).
    throw FileError(file + ": malformed JSON: " + e.what());
  }
  // A topology given as --model: say so, not "unknown key".
  if (doc.is_object() && !doc.contains("layers") &&
      (doc.contains("generator") || doc.contains("dims") || doc.contains("nodes")))
    throw FileError(file + ": a topology file (it has \"" +
                    (doc.contains("generator") ? "generator"
                     : doc.contains("dims")    ? "dims"
                                               : "nodes") +
                    "\"), not a model; a topology is --topology FILE, a model lists \"layers\" "
                    "(docs/MODELS.md)");
  Fields top(doc, file);
  top.only({"name", "description", "source", "params", "layers"});
  Model model;
  model.file = file;
  if (!top.has("name")) throw FileError(file + ": missing key 'name'");
  model.name = top.text("name", "");
  if (model.name.find_first_not_of(" \t") == std::string::npos)
    throw FileError(file + ".name: empty; the model needs a name (the plan prints it)");
  model.description = top.text("description", "");
  top.text("source", "");
  if (!top.has("layers")) throw FileError(file + ": missing key 'layers'");
  const json& layers = top.raw("layers");
  if (!layers.is_array() || layers.empty())
    throw FileError(file + ".layers: expected a non-empty array");
  std::set<std::string> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string where = file + ": layers[" + std::to_string(i) + "]";
    Fields f(layers[i], where);
    f.only({"name", "kind", "params", "act_in", "act_out", "flops", "repeat", "shape"});
    Layer l;
    if (!f.has("name")) throw FileError(where + ": missing key 'name'");
    l.name = f.text("name", "");
    // The plan names layers by it: an empty (or blank) name names nothing.
    if (l.name.find_first_not_of(" \t") == std::string::npos)
      throw FileError(where + ".name: empty; every layer needs a name (the plan lists it)");
    const std::string named = where + " (" + l.name + ")";
    f.set_where(named);
    if (!names.insert(l.name).second) throw FileError(named + ".name: duplicate layer name");
    if (!f.has("kind")) throw FileError(named + ": missing key 'kind'");
    const std::string kind = f.text("kind", "");
    bool known = false;
    for (const auto& [k, n] : kKindNames)
      if (n == kind) {
        l.kind = k;
        known = true;
      }
    if (!known)
      throw FileError(named + ".kind = '" + kind + "': unknown layer kind; valid: " + kind_list());
    l.repeat = f.integer("repeat", 1, 1);
    const bool has_shape = f.has("shape");
    if (has_shape) {
      l.shape = f.raw("shape");
      const DerivedLayer d = derive_layer(l.kind, l.shape, named + ".shape");
      // Figures may be omitted next to a shape; when given they must agree.
      const std::pair<const char*, std::int64_t DerivedLayer::*> keys[] = {
          {"params", &DerivedLayer::params},
          {"act_in", &DerivedLayer::act_in},
          {"act_out", &DerivedLayer::act_out},
          {"flops", &DerivedLayer::flops}};
      DerivedLayer given = d;
      for (const auto& [key, member] : keys) {
        if (!f.has(key)) continue;
        given.*member = f.integer(key, 0);
        if (given.*member != d.*member)
          throw FileError(named + "." + key + " = " + std::to_string(given.*member) +
                          " disagrees with its shape, which gives " + std::to_string(d.*member));
      }
      l.params = d.params;
      l.act_in = d.act_in;
      l.act_out = d.act_out;
      l.flops = d.flops;
      if (l.kind == LayerKind::linear) {
        l.in_features = l.shape.at("in_features").get<std::int64_t>();
        l.out_features = l.shape.at("out_features").get<std::int64_t>();
      }
    } else {
      if (l.kind == LayerKind::linear)
        throw FileError(named + ": a linear layer needs its shape (in_features, out_features)");
      l.params = f.required("params", 0);
      l.act_in = f.required("act_in", 0);
      l.act_out = f.required("act_out", 0);
      l.flops = f.required("flops", 0);
    }
    if (l.kind == LayerKind::transformer_block) l.tp_all_reduces = 4;
    if (l.kind == LayerKind::attention || l.kind == LayerKind::mlp) l.tp_all_reduces = 2;
    f.finish();
    model.layers.push_back(std::move(l));
  }
  std::int64_t total = 0;
  for (const Layer& l : model.layers)
    total = add(total, mul(l.params, l.repeat, file + ": layers (" + l.name + ")"),
                file + ": total params");
  if (top.has("params")) {
    const std::int64_t given = top.integer("params", 0);
    if (given != total)
      throw FileError(file + ".params = " + std::to_string(given) +
                      " disagrees with the layers, which sum to " + std::to_string(total));
  }
  top.finish();
  return model;
}

Model load_model(const std::string& path) {
  return parse_model(read_input_file(path, "model file"), path);
}

}  // namespace collkit
