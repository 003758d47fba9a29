#include "core/fault.h"

#include <array>
#include <charconv>
#include <cstdlib>

#include "core/check.h"

namespace zl::fault {

namespace internal {
std::atomic<bool> g_any_armed{false};
}  // namespace internal

namespace {

constexpr std::array<std::string_view, static_cast<size_t>(Point::kCount)> kNames = {"forward", "kv_admit", "kv_grow",
                                                                                      "kv_map", "kv_populate"};

// Relaxed atomics throughout: arm() happens before the hits it should affect
// (a test arms, then submits; serve arms before the engine starts), and a
// hit racing with arm() may see either plan.
struct State {
  std::atomic<bool> armed{false};
  std::atomic<int64_t> after{0}, every{1}, count{0};
  std::atomic<int64_t> hits{0}, failed{0};
};
std::array<State, static_cast<size_t>(Point::kCount)> g_states;

State& state(Point point) { return g_states[static_cast<size_t>(point)]; }

StatusOr<int64_t> parse_count(std::string_view part, std::string_view key, std::string_view text, int64_t min) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min)
    return invalid_argument("fault spec \"", part, "\": ", key, " must be an integer >= ", min, ", got \"", text, "\"");
  return v;
}

// "point[:key=N]..." -> (point, plan)
Status parse_part(std::string_view part, Point* point, Plan* plan) {
  std::string_view rest = part;
  size_t colon = rest.find(':');
  std::string_view name = rest.substr(0, colon);
  size_t index = 0;
  while (index < kNames.size() && kNames[index] != name) ++index;
  if (index == kNames.size())
    return invalid_argument("fault spec \"", part, "\": unknown point \"", name,
                            "\" (known: forward, kv_admit, kv_grow, kv_map, kv_populate)");
  *point = static_cast<Point>(index);
  while (colon != std::string_view::npos) {
    rest = rest.substr(colon + 1);
    colon = rest.find(':');
    std::string_view kv = rest.substr(0, colon);
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq), value = eq == std::string_view::npos ? "" : kv.substr(eq + 1);
    int64_t* field = key == "after" ? &plan->after : key == "every" ? &plan->every : key == "count" ? &plan->count : nullptr;
    if (!field) return invalid_argument("fault spec \"", part, "\": unknown key \"", key, "\" (known: after, every, count)");
    ZL_ASSIGN_OR_RETURN(*field, parse_count(part, key, value, key == "every" ? 1 : 0));
  }
  return ok_status();
}

}  // namespace

void arm(Point point, const Plan& plan) {
  CHECK(plan.after >= 0 && plan.every >= 1 && plan.count >= 0) << "bad fault plan";
  State& s = state(point);
  s.after.store(plan.after, std::memory_order_relaxed);
  s.every.store(plan.every, std::memory_order_relaxed);
  s.count.store(plan.count, std::memory_order_relaxed);
  s.hits.store(0, std::memory_order_relaxed);
  s.failed.store(0, std::memory_order_relaxed);
  s.armed.store(true, std::memory_order_relaxed);
  internal::g_any_armed.store(true, std::memory_order_relaxed);
}

void disarm_all() {
  internal::g_any_armed.store(false, std::memory_order_relaxed);
  for (State& s : g_states) s.armed.store(false, std::memory_order_relaxed);
}

int64_t num_failed(Point point) { return state(point).failed.load(std::memory_order_relaxed); }

bool internal::should_fail_slow(Point point) {
  State& s = state(point);
  if (!s.armed.load(std::memory_order_relaxed)) return false;
  const int64_t h = s.hits.fetch_add(1, std::memory_order_relaxed) - s.after.load(std::memory_order_relaxed);
  if (h < 0 || h % s.every.load(std::memory_order_relaxed) != 0) return false;
  // Claim one of the `count` failures (hits may race on other threads).
  int64_t failed = s.failed.load(std::memory_order_relaxed);
  do {
    if (failed >= s.count.load(std::memory_order_relaxed)) return false;
  } while (!s.failed.compare_exchange_weak(failed, failed + 1, std::memory_order_relaxed));
  return true;
}

Status arm_from_spec(std::string_view spec) {
  std::array<std::pair<bool, Plan>, static_cast<size_t>(Point::kCount)> plans{};
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    Point point{};
    Plan plan;
    ZL_RETURN_IF_ERROR(parse_part(spec.substr(0, comma), &point, &plan));
    plans[static_cast<size_t>(point)] = {true, plan};
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
  }
  for (size_t i = 0; i < plans.size(); ++i)
    if (plans[i].first) arm(static_cast<Point>(i), plans[i].second);
  return ok_status();
}

StatusOr<std::string> arm_from_env() {
  const char* spec = std::getenv("ZEROLAYER_FAULTS");
  if (!spec || !*spec) return std::string();
  ZL_RETURN_IF_ERROR(arm_from_spec(spec).with_prefix("ZEROLAYER_FAULTS"));
  return std::string(spec);
}

}  // namespace zl::fault
