#include "scenario/user_json.h"

#include <fmt/format.h>
#include <new>
#include <stdexcept>
#include <vector>

namespace overlapsim::scenario {

namespace {

// nlohmann's DOM builder, with the depth and the memory of what it built checked at every event.
// Not the parse callback: its DOM builder scans a list for discarded values at every object's end,
// which made a list of a million objects (a profiler trace's events) quadratic.
template <class Json> class BoundedDom {
public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  BoundedDom(Json& result, const std::string& path, const UserFileKind& kind,
             std::uintmax_t& budget)
      : dom_(result), path_(path), kind_(kind), budget_(budget), start_(budget) {}

  bool null() { return slot(0) && dom_.null(); }
  bool boolean(bool v) { return slot(0) && dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return slot(0) && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return slot(0) && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) {
    return slot(0) && dom_.number_float(v, s);
  }
  bool string(string_t& v) { return slot(text_bytes(v) + 32) && dom_.string(v); }
  bool binary(binary_t& v) { return slot(v.size() + 32) && dom_.binary(v); }
  bool key(string_t& v) {
    charge(text_bytes(v));
    return dom_.key(v);
  }
  bool start_object(std::size_t n) { return open(true) && dom_.start_object(n); }
  bool start_array(std::size_t n) { return open(false) && dom_.start_array(n); }
  bool end_object() {
    objects_.pop_back();
    return dom_.end_object();
  }
  bool end_array() {
    objects_.pop_back();
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t at, const std::string& token, const Exception& e) {
    return dom_.parse_error(at, token, e);
  }

private:
  static std::uintmax_t text_bytes(const string_t& s) { return s.size() > 15 ? s.size() + 1 : 0; }

  void charge(std::uintmax_t bytes) {
    if (bytes > budget_)
      throw std::runtime_error(fmt::format(
          "{}: once parsed, its values would take more than {} MiB of memory (the limit for a {}; "
          "this file alone: over {} MiB); expected a smaller file",
          path_, kind_.max_parsed_bytes >> 20, kind_.what, (start_ - budget_ + bytes) >> 20));
    budget_ -= bytes;
  }
  // A value's place in its list or object, and `extra` bytes of its own.
  bool slot(std::uintmax_t extra) {
    charge(extra + (objects_.empty()  ? 16
                    : objects_.back() ? kJsonMemberBytes
                                      : kJsonListItemBytes));
    return true;
  }
  bool open(bool object) {
    if (objects_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      throw std::runtime_error(fmt::format("{}: nested more than {} levels deep; expected a {}",
                                           path_, kMaxJsonDepth, kind_.what));
    slot(kJsonContainerBytes);
    objects_.push_back(object);
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const std::string& path_;
  const UserFileKind& kind_;
  std::uintmax_t& budget_;
  const std::uintmax_t start_;
  std::vector<bool> objects_; // the open containers, innermost last: object or list
};

template <class Json, class Input>
Json parse_bounded(Input&& input, const std::string& path, const UserFileKind& kind,
                   std::uintmax_t& budget) {
  Json result;
  try {
    BoundedDom<Json> dom(result, path, kind, budget);
    Json::sax_parse(std::forward<Input>(input), &dom);
  } catch (const nlohmann::json::exception& e) {
    release_json(result);
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  } catch (const std::bad_alloc&) {
    release_json(result); // first: the message needs memory too
    throw std::runtime_error(
        fmt::format("{}: out of memory while parsing the {}; expected a smaller file (or free "
                    "some memory, or raise ulimit -v)",
                    path, kind.what));
  } catch (...) { // past the depth or the budget
    release_json(result);
    throw;
  }
  return result;
}

} // namespace

template <class Json>
Json parse_user_json(std::string_view text, const std::string& path, const UserFileKind& kind,
                     std::uintmax_t& budget) {
  return parse_bounded<Json>(text, path, kind, budget);
}

template <class Json>
Json parse_user_json(std::istream& in, const std::string& path, const UserFileKind& kind,
                     std::uintmax_t& budget) {
  return parse_bounded<Json>(in, path, kind, budget);
}

template nlohmann::json parse_user_json<nlohmann::json>(std::string_view, const std::string&,
                                                        const UserFileKind&, std::uintmax_t&);
template nlohmann::ordered_json parse_user_json<nlohmann::ordered_json>(std::string_view,
                                                                        const std::string&,
                                                                        const UserFileKind&,
                                                                        std::uintmax_t&);
template nlohmann::json parse_user_json<nlohmann::json>(std::istream&, const std::string&,
                                                        const UserFileKind&, std::uintmax_t&);
template nlohmann::ordered_json parse_user_json<nlohmann::ordered_json>(std::istream&,
                                                                        const std::string&,
                                                                        const UserFileKind&,
                                                                        std::uintmax_t&);

nlohmann::json read_user_json(const std::string& path, const UserFileKind& kind) {
  std::uintmax_t budget = kind.max_parsed_bytes;
  return parse_user_json<nlohmann::json>(read_user_file(path, kind), path, kind, budget);
}

} // namespace overlapsim::scenario
