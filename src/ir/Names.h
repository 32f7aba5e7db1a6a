// The names lowering gives storage and loops, and the Funcs they belong to (for messages).
#pragma once
#include <cctype>
#include <string>

namespace weft {
namespace internal {

/** The storage of value i of Func f (its unique name), an output buffer's name for an output:
    f itself for value 0. */
inline std::string tuple_buffer_name(const std::string &f, int i) { return i == 0 ? f : f + ".v" + std::to_string(i); }

/** The Func whose storage `name` is: "f.v<k>" (a Tuple's value k) -> "f", else name itself. */
inline std::string func_of_buffer(const std::string &name) {
    size_t p = name.rfind(".v");
    if (p == std::string::npos || p + 2 == name.size()) return name;
    for (size_t q = p + 2; q < name.size(); q++)
        if (!std::isdigit((unsigned char)name[q])) return name;
    return name.substr(0, p);
}

/** The Func a loop belongs to: "<func>.s<k>.<var>" -> "<func>"; a loop named otherwise, itself. */
inline std::string func_of_loop(const std::string &loop) {
    for (size_t p = loop.find(".s"); p != std::string::npos; p = loop.find(".s", p + 1))
        if (p + 2 < loop.size() && std::isdigit((unsigned char)loop[p + 2])) return loop.substr(0, p);
    return loop;
}

}  // namespace internal
}  // namespace weft
