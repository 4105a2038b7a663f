// A minimal C++20 coroutine generator (std::generator is C++23). Each rank's
// program is a coroutine that co_yields its steps one by one, so an engine holds
// one coroutine frame per rank instead of the whole schedule (2^20 ranks in the
// simulator). Coroutine parameters must be taken by value: the frame outlives
// the caller's temporaries.
#pragma once

#include <coroutine>
#include <exception>
#include <functional>
#include <iterator>
#include <optional>
#include <utility>

namespace collkit {

template <typename T>
class Generator {
 public:
  struct promise_type {
    std::optional<T> current;
    // A value the coroutine keeps and yielded by reference (see below).
    T* borrowed = nullptr;
    std::exception_ptr error;

    Generator get_return_object() {
      return Generator{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(T value) {
      current = std::move(value);
      return {};
    }
    // co_yield std::ref(x): the consumer sees the coroutine's own x until
    // its next next(), with no copy, and the coroutine may reuse x (its
    // storage) once resumed. A consumer may move from it, as from a yielded
    // copy. A plain co_yield x still yields a copy.
    std::suspend_always yield_value(std::reference_wrapper<T> value) {
      borrowed = &value.get();
      return {};
    }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };

  using Handle = std::coroutine_handle<promise_type>;

  Generator() = default;
  explicit Generator(Handle h) : handle_(h) {}
  Generator(Generator&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Generator& operator=(Generator&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  ~Generator() { reset(); }

  // Advances to the next value; returns false at the end. Rethrows exceptions
  // raised inside the coroutine.
  bool next() {
    if (!handle_ || handle_.done()) return false;
    handle_.promise().current.reset();
    handle_.promise().borrowed = nullptr;
    handle_.resume();
    if (handle_.promise().error) std::rethrow_exception(handle_.promise().error);
    return !handle_.done();
  }
  T& value() {
    promise_type& p = handle_.promise();
    return p.borrowed != nullptr ? *p.borrowed : *p.current;
  }

  // Range-for support (input iteration only).
  struct Sentinel {};
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    explicit Iterator(Generator* g) : g_(g) {}
    T& operator*() const { return g_->value(); }
    Iterator& operator++() {
      if (!g_->next()) g_ = nullptr;
      return *this;
    }
    bool operator==(Sentinel) const { return g_ == nullptr; }

   private:
    Generator* g_;
  };
  Iterator begin() {
    if (!next()) return Iterator{nullptr};
    return Iterator{this};
  }
  Sentinel end() { return {}; }

 private:
  void reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  Handle handle_{};
};

}  // namespace collkit
