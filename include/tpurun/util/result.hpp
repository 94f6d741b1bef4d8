#pragma once
// A small expected-like type: C++20 has no std::expected, and errors in tpurun
// are values (one per worker), not exceptions.
#include <string>
#include <utility>
#include <variant>

namespace tpurun {

template <typename E>
struct Unexpected {
  E error;
};
template <typename E>
Unexpected<E> unexpected(E e) { return Unexpected<E>{std::move(e)}; }

template <typename T, typename E>
class Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Unexpected<E> e) : v_(std::in_place_index<1>, std::move(e.error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  E& error() { return std::get<1>(v_); }
  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace tpurun
