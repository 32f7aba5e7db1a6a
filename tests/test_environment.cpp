// The tests run with the disk cache off: a kernel that another run left in ~/.cache/weft would
// change what the cache statistics count. The disk cache's own tests name their folders (and
// the child processes they start keep the folder they are given).
#include <cstdlib>

namespace {
const int disk_cache_off = [] {
    return std::getenv("WEFT_DISK_CACHE_CHILD") ? 0 : setenv("WEFT_CACHE_DIR", "off", 1);
}();
}  // namespace
