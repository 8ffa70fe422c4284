#include "directory.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

namespace dorm::detail {

std::uint64_t Directory::hash(const ObjectId& id) {
  std::uint64_t body = 0;
  std::memcpy(&body, id.body().data(), sizeof body);
  std::uint64_t h = (body ^ std::hash<std::string>{}(id.ns())) * 0x9E3779B97F4A7C15ull;
  // The multiply moves entropy up: fold it back down for the table index (low bits), the
  // shard being the top bits.
  return h ^ (h >> 29);
}

void intrusive_ptr_add_ref(const Activation* act) noexcept {
  act->refs.fetch_add(1, std::memory_order_relaxed);
}

void intrusive_ptr_release(const Activation* act) noexcept {
  if (act->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete act;
}

// ---- ActivationTable ----

Activation* ActivationTable::find(std::uint64_t hash, const ObjectId& id) const {
  if (size_ == 0) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  const std::uintptr_t want = tag(hash);
  for (std::size_t i = home(hash);; i = (i + 1) & mask) {
    const std::uintptr_t slot = slots_[i];
    if (!slot) return nullptr;
    if (tagged_ && (slot & ~kAddressMask) != want) continue;
    Activation* act = address(slot);
    if (act->hash == hash && act->id == id) return act;
  }
}

void ActivationTable::insert(ActivationRef act) {
  if (tagged_ && (reinterpret_cast<std::uintptr_t>(act.get()) & ~kAddressMask) != 0) untag();
  // Load factor at most 3/4: probes stay short.
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();
  place(act.detach());  // the table's reference
  ++size_;
}

void ActivationTable::place(Activation* act) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(act->hash);
  while (slots_[i]) i = (i + 1) & mask;
  slots_[i] = reinterpret_cast<std::uintptr_t>(act) | tag(act->hash);
}

bool ActivationTable::erase(const Activation* act) {
  if (size_ == 0) return false;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(act->hash);
  for (;; i = (i + 1) & mask) {
    if (!slots_[i]) return false;
    if (address(slots_[i]) == act) break;
  }
  // Backward shift: each later entry of the run moves into the hole unless its home lies
  // cyclically after the hole (then it is already where a probe from its home finds it).
  std::size_t hole = i;
  for (std::size_t j = (hole + 1) & mask; slots_[j]; j = (j + 1) & mask) {
    std::size_t h = home(address(slots_[j])->hash);
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = 0;
  --size_;
  intrusive_ptr_release(act);  // the table's reference
  return true;
}

void ActivationTable::grow() {
  std::vector<std::uintptr_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 16 : old.size() * 2, 0);
  for (auto slot : old) {
    if (slot) place(address(slot));
  }
}

void ActivationTable::untag() {
  std::vector<Activation*> all;
  all.reserve(size_);
  for_each([&](Activation* act) { all.push_back(act); });
  tagged_ = false;
  std::fill(slots_.begin(), slots_.end(), 0);
  for (auto* act : all) place(act);
}

void ActivationTable::clear() {
  for (auto slot : slots_) {
    if (slot) intrusive_ptr_release(address(slot));
  }
  slots_.clear();
  size_ = 0;
}

// ---- Lru ----

void Lru::push_front(Activation* act) {
  act->lru_prev = nullptr;
  act->lru_next = head_;
  if (head_) head_->lru_prev = act;
  head_ = act;
  if (!tail_) tail_ = act;
}

void Lru::erase(Activation* act) {
  (act->lru_prev ? act->lru_prev->lru_next : head_) = act->lru_next;
  (act->lru_next ? act->lru_next->lru_prev : tail_) = act->lru_prev;
  act->lru_prev = act->lru_next = nullptr;
}

void Lru::move_to_front(Activation* act) {
  if (head_ == act) return;
  erase(act);
  push_front(act);
}

}  // namespace dorm::detail
