#include "cache/DiskCache.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <set>
#include <vector>
#if WEFT_HAVE_XXHASH
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

namespace weft {
namespace internal {

namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'K', 'C', '0', '1'};
constexpr const char *kSuffix = ".wkc";

std::mutex &warn_mutex() {
    static std::mutex m;
    return m;
}
/** Folders found unwritable in this process: not tried again (one warning each). */
std::set<std::string> &failed_dirs() {
    static auto *s = new std::set<std::string>;
    return *s;
}

void give_up_on(const std::string &dir, const std::string &why) {
    std::lock_guard<std::mutex> l(warn_mutex());
    if (!failed_dirs().insert(dir).second) return;
    std::fprintf(stderr, "weft: warning: the kernel cache folder %s cannot be used (%s); compiled kernels are kept in memory only\n",
                 dir.c_str(), why.c_str());
}

void note(bool debug, const char *what, const std::string &path, const std::string &detail = "") {
    if (!debug) return;
    std::fprintf(stderr, "// weft: disk cache %s: %s%s%s\n", what, path.c_str(), detail.empty() ? "" : ": ",
                 detail.c_str());
}

std::string errno_text() { return std::strerror(errno); }

/** mkdir -p. */
bool make_dirs(const std::string &path, std::string &why) {
    std::string cur;
    size_t i = 0;
    while (i <= path.size()) {
        size_t j = path.find('/', i);
        if (j == std::string::npos) j = path.size();
        cur = path.substr(0, j);
        i = j + 1;
        if (cur.empty()) continue;
        if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
            why = "cannot create " + cur + ": " + errno_text();
            return false;
        }
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        why = path + " is not a folder";
        return false;
    }
    return true;
}

bool read_file(const std::string &path, std::string &out, int &err) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        return false;
    }
    out.clear();
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            close(fd);
            return false;
        }
        if (n == 0) break;
        out.append(buf, (size_t)n);
    }
    close(fd);
    return true;
}

bool write_all(int fd, const std::string &s) {
    size_t done = 0;
    while (done < s.size()) {
        ssize_t n = write(fd, s.data() + done, s.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        done += (size_t)n;
    }
    return true;
}

void put_u64(std::string &s, uint64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);
    s.append(b, 8);
}
void put_str(std::string &s, const std::string &v) {
    put_u64(s, v.size());
    s += v;
}

/** Reads fixed fields from a byte range, failing (not reading past the end) on a short one. */
struct Reader {
    const std::string &b;
    size_t pos;
    bool ok = true;
    uint64_t u64() {
        if (!ok || b.size() - pos < 8) {
            ok = false;
            return 0;
        }
        uint64_t v;
        std::memcpy(&v, b.data() + pos, 8);
        pos += 8;
        return v;
    }
    std::string str() {
        uint64_t n = u64();
        if (!ok || b.size() - pos < n) {
            ok = false;
            return {};
        }
        std::string s = b.substr(pos, (size_t)n);
        pos += (size_t)n;
        return s;
    }
};

uint64_t checksum(const char *p, size_t n) {
#if WEFT_HAVE_XXHASH
    return XXH3_64bits(p, n);
#else
    return std::hash<std::string>()(std::string(p, n));
#endif
}

struct FileInfo {
    std::string path;
    uint64_t bytes;
    struct timespec mtime;
    bool temporary;
};

/** Every file under dir's kind folders. */
std::vector<FileInfo> list_files(const std::string &dir) {
    std::vector<FileInfo> files;
    DIR *top = opendir(dir.c_str());
    if (!top) return files;
    while (dirent *k = readdir(top)) {
        if (k->d_name[0] == '.') continue;
        std::string sub = dir + "/" + k->d_name;
        DIR *d = opendir(sub.c_str());
        if (!d) continue;
        while (dirent *e = readdir(d)) {
            std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            std::string p = sub + "/" + name;
            struct stat st;
            if (lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
            files.push_back({p, (uint64_t)st.st_size, st.st_mtim, name.rfind(".tmp-", 0) == 0});
        }
        closedir(d);
    }
    closedir(top);
    return files;
}

/** Removes the least recently used files until the folder fits its bound (and temporary files
    a process left behind more than an hour ago). */
void trim(const std::string &dir, bool debug) {
    uint64_t max = disk_cache_max_bytes();
    std::vector<FileInfo> files = list_files(dir);
    uint64_t total = 0;
    time_t now = time(nullptr);
    std::vector<FileInfo> entries;
    for (auto &f : files) {
        if (f.temporary) {
            if (now - f.mtime.tv_sec > 3600) unlink(f.path.c_str());
            else total += f.bytes;
            continue;
        }
        total += f.bytes;
        entries.push_back(f);
    }
    if (total <= max) return;
    std::sort(entries.begin(), entries.end(), [](const FileInfo &a, const FileInfo &b) {
        return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
    });
    for (auto &f : entries) {
        if (total <= max) break;
        if (unlink(f.path.c_str()) == 0 || errno == ENOENT) {
            total -= f.bytes;
            note(debug, "evicted (least recently used)", f.path);
        }
    }
}

}  // namespace

std::string digest(const std::string &s) {
#if WEFT_HAVE_XXHASH
    XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
    return buf;
#else
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)std::hash<std::string>()(s));
    return buf;
#endif
}

uint64_t disk_cache_max_bytes() {
    double mb = 512;
    if (const char *e = std::getenv("WEFT_CACHE_MAX_MB")) {
        char *end = nullptr;
        double v = std::strtod(e, &end);
        if (*e && end && *end == 0 && v >= 0 && v < 1e9) {  // (NaN fails v >= 0)
            mb = v;
        } else {
            static std::once_flag once;
            std::call_once(once, [&] {
                std::fprintf(stderr, "weft: warning: WEFT_CACHE_MAX_MB=\"%s\" is not a number of megabytes; using 512\n", e);
            });
        }
    }
    return (uint64_t)(mb * 1048576.0);
}

std::string disk_cache_dir() {
#if !WEFT_HAVE_XXHASH
    return "";  // built without xxHash: no checksums, so no disk cache
#else
    std::string dir;
    const char *e = std::getenv("WEFT_CACHE_DIR");
    if (e && *e) {
        std::string v = e;
        if (v == "off" || v == "OFF" || v == "0" || v == "none") return "";
        dir = v;
    } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') {
        dir = std::string(x) + "/weft";
    } else if (const char *h = std::getenv("HOME"); h && *h) {
        dir = std::string(h) + "/.cache/weft";
    } else {
        return "";
    }
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    std::lock_guard<std::mutex> l(warn_mutex());
    return failed_dirs().count(dir) ? "" : dir;
#endif
}

std::string disk_cache_path(const std::string &dir, const std::string &kind, const std::string &key) {
    return dir + "/" + kind + "/" + digest(key) + kSuffix;
}

std::string encode_cache_entry(const std::string &key, const std::string &versions, const CodeSections &code) {
    std::string body;
    put_u64(body, 0);  // the body's length, filled in below
    put_str(body, versions);
    put_str(body, key);
    put_u64(body, code.size());
    for (auto &[name, bytes] : code) {
        put_str(body, name);
        put_str(body, bytes);
    }
    uint64_t n = body.size();
    std::memcpy(&body[0], &n, 8);
    std::string file(kMagic, 8);
    put_u64(file, checksum(body.data(), body.size()));
    return file + body;
}

bool peek_cache_entry(const std::string &bytes, std::string &key, std::string &versions) {
    if (bytes.size() < 24 || std::memcmp(bytes.data(), kMagic, 8) != 0) return false;
    Reader r{bytes, 24};
    versions = r.str();
    key = r.str();
    return r.ok;
}

std::string decode_cache_entry(const std::string &bytes, const std::string &key, const std::string &versions,
                               CodeSections &out) {
    out.clear();
    if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        return bytes.size() < 8 ? "truncated (" + std::to_string(bytes.size()) + " bytes)" : "not a weft cache file";
    Reader r{bytes, 8};
    uint64_t sum = r.u64();
    size_t body_at = r.pos;
    uint64_t len = r.u64();
    if (!r.ok) return "truncated (" + std::to_string(bytes.size()) + " bytes)";
    if (len != bytes.size() - body_at)
        return len > bytes.size() - body_at ? "truncated (" + std::to_string(bytes.size()) + " bytes)"
                                            : "corrupted (bytes after its end)";
    if (checksum(bytes.data() + body_at, bytes.size() - body_at) != sum) return "corrupted (checksum mismatch)";
    std::string v = r.str(), k = r.str();
    uint64_t n = r.u64();
    if (!r.ok) return "corrupted (bad header)";
    if (k != key) return "foreign (written for another key)";
    if (v != versions) return "stale (written by " + v + "; this is " + versions + ")";
    for (uint64_t i = 0; i < n && r.ok; i++) {
        std::string name = r.str();
        std::string data = r.str();
        if (r.ok) out[name] = std::move(data);
    }
    if (!r.ok || r.pos != bytes.size()) {
        out.clear();
        return "corrupted (bad sections)";
    }
    return "";
}

bool disk_cache_load(const std::string &kind, const std::string &key, const std::string &versions, CodeSections &out,
                     bool debug) {
    std::string dir = disk_cache_dir();
    if (dir.empty()) return false;
    std::string path = disk_cache_path(dir, kind, key);
    std::string bytes;
    int err = 0;
    if (!read_file(path, bytes, err)) {
        note(debug, "miss", path, err == ENOENT ? "" : std::strerror(err));
        return false;
    }
    std::string why = decode_cache_entry(bytes, key, versions, out);
    if (!why.empty()) {
        note(debug, "rejected", path, why);
        return false;
    }
    utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now the most recently used
    note(debug, "hit", path);
    return true;
}

bool disk_cache_store(const std::string &kind, const std::string &key, const std::string &versions,
                      const CodeSections &code, bool debug) {
    std::string dir = disk_cache_dir();
    if (dir.empty()) return false;
    std::string why;
    if (!make_dirs(dir + "/" + kind, why)) {
        give_up_on(dir, why);
        return false;
    }
    std::string path = disk_cache_path(dir, kind, key);
    static std::atomic<uint64_t> counter{0};
    std::string tmp = dir + "/" + kind + "/.tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
                      path.substr(path.rfind('/') + 1);
    std::string bytes = encode_cache_entry(key, versions, code);
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        give_up_on(dir, "cannot write " + tmp + ": " + errno_text());
        return false;
    }
    bool ok = write_all(fd, bytes);
    std::string err = ok ? "" : errno_text();
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno_text();
    }
    if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
        ok = false;
        err = errno_text();
    }
    if (!ok) {
        unlink(tmp.c_str());
        note(debug, "not written", path, err);  // (a full disk: the next compile tries again)
        return false;
    }
    note(debug, "written", path, std::to_string(bytes.size()) + " bytes");
    trim(dir, debug);
    return true;
}

}  // namespace internal
}  // namespace weft
