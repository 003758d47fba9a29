// Stop strings matched across token boundaries. Text arrives piece by piece
// (as detokenized); what could still be the start of a stop string is held
// back, so a stop string is never emitted, even partly. When one completes,
// the text before it is released and everything after it is dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zl {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends text; returns what may be emitted now.
  std::string push(std::string_view text);
  // At the end of generation: returns whatever is still held back.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that matched, when stopped().
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // text not yet emitted
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace zl
