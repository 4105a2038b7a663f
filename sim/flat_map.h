// An open-addressing hash map from 64-bit keys to small trivially copyable
// values, internal to the simulator. std::unordered_map allocates one node per
// entry; the engine inserts and erases an entry for tens of millions of
// messages (2^20 ranks x log2 p steps), so a flat table with linear probing and
// backward-shift deletion (no tombstones, so the table never degrades) keeps
// that cost to a few cache misses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collkit::sim_detail {

template <typename V>
class FlatMap {
 public:
  // The one key that cannot be stored: it marks empty slots.
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  FlatMap() { rehash(16); }

  std::size_t size() const { return size_; }

  // Pointer to the value of `key`, or nullptr. Invalidated by insert().
  V* find(std::uint64_t key) {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  // Starts fetching the slot where a lookup of `key` begins (a hint only).
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[home(key)]); }

  // The value of `key`, value-initialised when absent (`inserted` tells which).
  V& insert(std::uint64_t key, bool& inserted) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) {
        inserted = false;
        return s.value;
      }
      if (s.key == kEmpty) {
        s.key = key;
        s.value = V{};
        ++size_;
        inserted = true;
        return s.value;
      }
    }
  }

  void erase(std::uint64_t key) {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) return;
      i = (i + 1) & mask_;
    }
    // Backward shift: pull later entries of the probe run into the hole unless
    // their home lies cyclically in (hole, j], where they already are reachable.
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
      const std::size_t k = home(slots_[j].key);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (!stays) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = kEmpty;
    --size_;
  }

  // Visits every (key, value) in table order (deterministic for equal inputs).
  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key != kEmpty) f(s.key, s.value);
  }

 private:
  struct Slot {
    std::uint64_t key;
    V value;
  };

  std::size_t home(std::uint64_t x) const {
    // MurmurHash3 finaliser: pair keys (src << 32 | dst) differ in few bits.
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x) & mask_;
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old(capacity, Slot{kEmpty, V{}});
    old.swap(slots_);
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      bool inserted = false;
      insert(s.key, inserted) = s.value;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace collkit::sim_detail
