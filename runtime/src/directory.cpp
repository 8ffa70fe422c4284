#include "directory.hpp"

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

// ---- ActivationTable ----

Activation* ActivationTable::find(std::uint64_t hash, const ObjectId& id) const {
  if (size_ == 0) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(hash);; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (!slot.act) return nullptr;
    if (slot.hash == hash && slot.act->id == id) return slot.act.get();
  }
}

void ActivationTable::insert(std::shared_ptr<Activation> act) {
  // Load factor at most 3/4: probes stay short.
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(act->hash);
  while (slots_[i].act) i = (i + 1) & mask;
  slots_[i].hash = act->hash;
  slots_[i].act = std::move(act);
  ++size_;
}

bool ActivationTable::erase(const Activation* act) {
  if (size_ == 0) return false;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(act->hash);
  for (;; i = (i + 1) & mask) {
    if (!slots_[i].act) return false;
    if (slots_[i].act.get() == act) break;
  }
  // Backward shift: each later entry of the run moves into the hole unless its home lies
  // cyclically after the hole (then it is already where a probe from its home finds it).
  std::size_t hole = i;
  for (std::size_t j = (hole + 1) & mask; slots_[j].act; j = (j + 1) & mask) {
    std::size_t h = home(slots_[j].hash);
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = std::move(slots_[j]);
    hole = j;
  }
  slots_[hole] = Slot{};
  --size_;
  return true;
}

void ActivationTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
  size_ = 0;
  for (auto& slot : old) {
    if (slot.act) insert(std::move(slot.act));
  }
}

void ActivationTable::clear() {
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
