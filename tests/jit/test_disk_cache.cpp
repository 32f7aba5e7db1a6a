// The persistent kernel cache (WEFT_CACHE_DIR): code compiled by one process is loaded by the
// next; damaged, foreign and stale files are never loaded; the folder stays within its bound;
// concurrent processes share it; an unusable folder leaves the cache in memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include "cache/DiskCache.h"
#include "weft/weft.h"

using namespace weft;
namespace fs = std::filesystem;
using internal::CodeSections;

extern char **environ;

namespace {

/** A fresh folder for the disk cache, made the one in use for the test's duration. */
struct CacheFolder {
    std::string dir;
    CacheFolder() {
        char tmpl[] = "/tmp/weft-disk-cache-XXXXXX";
        dir = mkdtemp(tmpl);
        setenv("WEFT_CACHE_DIR", dir.c_str(), 1);
    }
    ~CacheFolder() {
        setenv("WEFT_CACHE_DIR", "off", 1);
        unsetenv("WEFT_CACHE_MAX_MB");
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::vector<std::string> entries() const {
        std::vector<std::string> v;
        std::error_code ec;
        if (fs::exists(dir + "/kernels"))
            for (auto &e : fs::directory_iterator(dir + "/kernels", ec)) v.push_back(e.path().string());
        std::sort(v.begin(), v.end());
        return v;
    }
};

struct Delta {
    CacheStats b = cache_stats();
    uint64_t compilations() const { return cache_stats().compilations - b.compilations; }
    uint64_t disk_hits() const { return cache_stats().disk_hits - b.disk_hits; }
    uint64_t disk_writes() const { return cache_stats().disk_writes - b.disk_writes; }
};

std::string read_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string &path, const std::string &bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
}

/** A 3x3 blur of a w x h image, defined afresh (as a new process would), realized and checked
    against a direct computation. `name` names its Funcs. */
void run_blur(int w, int h, const std::string &name = "blur") {
    Buffer<float> in(w + 2, h + 2);
    for (int y = 0; y < h + 2; y++)
        for (int x = 0; x < w + 2; x++) in(x, y) = (float)((x * 7 + y * 13) % 17);
    Var x("x"), y("y");
    Func bx(name + "_x"), by(name + "_y");
    bx(x, y) = in(x, y) + in(x + 1, y) + in(x + 2, y);
    by(x, y) = (bx(x, y) + bx(x, y + 1) + bx(x, y + 2)) / 9.0f;
    by.vectorize(x, 8).parallel(y);
    bx.compute_at(by, y).vectorize(x, 8);
    Buffer<float> out = by.realize({w, h});
    for (int yy = 0; yy < h; yy++)
        for (int xx = 0; xx < w; xx++) {
            float e = 0;
            for (int j = 0; j < 3; j++) {
                float r = 0;
                for (int i = 0; i < 3; i++) r += in(xx + i, yy + j);
                e += r;
            }
            e /= 9.0f;
            ASSERT_FLOAT_EQ(out(xx, yy), e) << "at " << xx << "," << yy;
        }
}

/** Runs the blur after the in-memory cache was emptied (a new process, as far as the kernel
    cache knows); returns the statistics of that run (clear_cache() zeroes them). */
CacheStats run_blur_fresh(int w, int h, const std::string &name = "blur") {
    clear_cache();
    run_blur(w, h, name);
    return cache_stats();
}

TEST(DiskCache, ANewProcessLoadsWhatTheLastCompiled) {
    CacheFolder folder;
    CacheStats d = run_blur_fresh(37, 11);
    EXPECT_EQ(d.compilations, 1u);
    EXPECT_EQ(d.disk_writes, 1u);
    EXPECT_EQ(d.disk_hits, 0u);
    ASSERT_EQ(folder.entries().size(), 1u);
    CacheStats d2 = run_blur_fresh(37, 11);
    EXPECT_EQ(d2.compilations, 0u) << "loaded, not compiled";
    EXPECT_EQ(d2.disk_hits, 1u);
    EXPECT_EQ(d2.disk_writes, 0u);
    Delta d3;
    run_blur(37, 11);  // the in-memory cache has it now
    EXPECT_EQ(d3.disk_hits(), 0u);
    EXPECT_EQ(d3.compilations(), 0u);
    CacheStats d4 = run_blur_fresh(38, 11);  // another shape: another key
    EXPECT_EQ(d4.compilations, 1u);
    EXPECT_EQ(folder.entries().size(), 2u);
}

TEST(DiskCache, OffWritesNothing) {
    CacheFolder folder;
    setenv("WEFT_CACHE_DIR", "off", 1);
    CacheStats d1 = run_blur_fresh(21, 5), d = run_blur_fresh(21, 5);
    EXPECT_EQ(d1.compilations + d.compilations, 2u);
    EXPECT_EQ(d1.disk_writes + d1.disk_hits + d.disk_writes + d.disk_hits, 0u);
    EXPECT_TRUE(folder.entries().empty());
}

TEST(DiskCache, EveryKindOfDamagedFileIsIgnoredAndReplaced) {
    CacheFolder folder;
    run_blur_fresh(19, 7);
    auto files = folder.entries();
    ASSERT_EQ(files.size(), 1u);
    const std::string path = files[0];
    const std::string good = read_bytes(path);
    std::string key, versions;
    ASSERT_TRUE(internal::peek_cache_entry(good, key, versions));
    CodeSections sections;
    ASSERT_EQ(internal::decode_cache_entry(good, key, versions, sections), "");
    EXPECT_TRUE(sections.count("cpu.o") && sections.count("cpu.sym"));

    std::string flipped = good;
    flipped[good.size() / 2] ^= 0x40;
    std::string bad_magic = good;
    bad_magic[0] = 'X';
    std::mt19937 rng(7);
    std::string noise(good.size(), 0);
    for (auto &c : noise) c = (char)rng();
    struct Damage {
        const char *what;
        std::string bytes;
        const char *reason;
    };
    std::vector<Damage> damages = {
        {"empty", "", "truncated"},
        {"truncated to half", good.substr(0, good.size() / 2), "truncated"},
        {"truncated by one byte", good.substr(0, good.size() - 1), "truncated"},
        {"a byte too many", good + "x", "corrupted"},
        {"a flipped bit", flipped, "checksum"},
        {"not a cache file", bad_magic, "not a weft cache file"},
        {"random bytes", noise, "not a weft cache file"},
        {"foreign (another key)", internal::encode_cache_entry(key + "|other", versions, sections), "foreign"},
        {"stale (older weft)", internal::encode_cache_entry(key, "weft 0.0.1 (sources 0), LLVM 18", sections), "stale"},
        {"an entry lacking its object code",
         [&] {
             CodeSections s = sections;
             s.erase("cpu.o");
             return internal::encode_cache_entry(key, versions, s);
         }(),
         "lacks part of the code"},
        {"an object that is not an object",
         [&] {
             CodeSections s = sections;
             s["cpu.o"] = std::string(64, '\x7f');
             return internal::encode_cache_entry(key, versions, s);
         }(),
         "entry not used"},
    };
    set_debug(true);
    for (auto &dmg : damages) {
        SCOPED_TRACE(dmg.what);
        write_bytes(path, dmg.bytes);
        testing::internal::CaptureStderr();
        CacheStats d = run_blur_fresh(19, 7);
        std::string err = testing::internal::GetCapturedStderr();
        EXPECT_EQ(d.disk_hits, 0u) << "a damaged file was loaded";
        EXPECT_EQ(d.compilations, 1u);
        EXPECT_EQ(d.disk_writes, 1u) << "replaced";
        EXPECT_NE(err.find(dmg.reason), std::string::npos) << "WEFT_DEBUG says why it was not used: " << err.substr(0, 2000);
        CodeSections s2;
        EXPECT_EQ(internal::decode_cache_entry(read_bytes(path), key, versions, s2), "") << "a good entry again";
        EXPECT_EQ(run_blur_fresh(19, 7).disk_hits, 1u);
    }
    set_debug(false);
}

TEST(DiskCache, FileFormatRejectsEveryTruncationAndFlip) {
    CodeSections code = {{"a.o", std::string("\0\1\2object", 9)}, {"a.sym", "entry"}, {"lowered", "abc"}};
    std::string key = "pipeline|x86-64|shape 1,2,3", versions = "weft 1 (sources x), LLVM 19";
    std::string good = internal::encode_cache_entry(key, versions, code);
    CodeSections out;
    ASSERT_EQ(internal::decode_cache_entry(good, key, versions, out), "");
    EXPECT_EQ(out, code);
    for (size_t n = 0; n < good.size(); n++)
        EXPECT_NE(internal::decode_cache_entry(good.substr(0, n), key, versions, out), "") << "truncated to " << n;
    for (size_t i = 0; i < good.size(); i++)
        for (int bit = 0; bit < 8; bit++) {
            std::string b = good;
            b[i] ^= (char)(1 << bit);
            EXPECT_NE(internal::decode_cache_entry(b, key, versions, out), "") << "byte " << i << " bit " << bit;
            EXPECT_TRUE(out.empty());
        }
    EXPECT_NE(internal::decode_cache_entry(good, key + "x", versions, out), "");
    EXPECT_NE(internal::decode_cache_entry(good, key, versions + "x", out), "");
    // Names are fixed-length hex digests of the key.
    EXPECT_EQ(internal::disk_cache_path("/d", "kernels", key), internal::disk_cache_path("/d", "kernels", key));
    EXPECT_NE(internal::disk_cache_path("/d", "kernels", key), internal::disk_cache_path("/d", "kernels", key + " "));
}

TEST(DiskCache, FuncsNamedOtherwiseShareTheEntry) {
    // Names are canonicalised in the key (as in memory): a pipeline that differs only in its
    // Funcs' names loads the same code, and computes the same.
    CacheFolder folder;
    run_blur_fresh(23, 9, "first");
    CacheStats d = run_blur_fresh(23, 9, "second");
    EXPECT_EQ(d.disk_hits, 1u);
    EXPECT_EQ(d.compilations, 0u);
    EXPECT_EQ(folder.entries().size(), 1u);
}

TEST(DiskCache, LeastRecentlyUsedGoFirst) {
    CacheFolder folder;
    auto entry_of = [&](int w) {
        auto before = folder.entries();
        run_blur_fresh(w, 4);
        auto after = folder.entries();
        for (auto &f : after)
            if (std::find(before.begin(), before.end(), f) == before.end()) return f;
        return std::string();
    };
    std::string a = entry_of(40), b = entry_of(41), c = entry_of(42);
    ASSERT_FALSE(a.empty() || b.empty() || c.empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // a is used again: now b is the least recently used
    EXPECT_EQ(run_blur_fresh(40, 4).disk_hits, 1u);
    uint64_t sum = fs::file_size(a) + fs::file_size(b) + fs::file_size(c);
    setenv("WEFT_CACHE_MAX_MB", std::to_string((double)(sum + 256) / 1048576.0).c_str(), 1);
    std::string e = entry_of(43);
    ASSERT_FALSE(e.empty());
    EXPECT_FALSE(fs::exists(b)) << "the least recently used entry goes first";
    EXPECT_TRUE(fs::exists(a));
    EXPECT_TRUE(fs::exists(c));
    EXPECT_TRUE(fs::exists(e));
    uint64_t total = 0;
    for (auto &f : folder.entries()) total += fs::file_size(f);
    EXPECT_LE(total, internal::disk_cache_max_bytes());
    // A bound of zero keeps nothing, and everything still runs.
    setenv("WEFT_CACHE_MAX_MB", "0", 1);
    run_blur_fresh(44, 4);
    EXPECT_TRUE(folder.entries().empty());
}

TEST(DiskCache, ABadSizeBoundIsTheDefault) {
    CacheFolder folder;
    testing::internal::CaptureStderr();
    for (const char *bad : {"abc", "nan", "-1", "1e300", ""}) {
        setenv("WEFT_CACHE_MAX_MB", bad, 1);
        EXPECT_EQ(internal::disk_cache_max_bytes(), 512ull << 20) << "\"" << bad << "\"";
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("not a number of megabytes"), std::string::npos) << err;
    setenv("WEFT_CACHE_MAX_MB", "0.5", 1);
    EXPECT_EQ(internal::disk_cache_max_bytes(), 512ull << 10);
    run_blur_fresh(17, 3);  // and everything runs
}

TEST(DiskCache, AnUnusableFolderWarnsOnceAndKeepsWorking) {
    CacheFolder folder;
    std::string file = folder.dir + "/a-file";
    write_bytes(file, "not a folder");
    setenv("WEFT_CACHE_DIR", (file + "/cache").c_str(), 1);
    testing::internal::CaptureStderr();
    uint64_t compiled = 0, disk = 0;
    for (int w : {29, 30, 29}) {
        CacheStats d = run_blur_fresh(w, 3);
        compiled += d.compilations;
        disk += d.disk_writes + d.disk_hits;
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(compiled, 3u);
    EXPECT_EQ(disk, 0u);
    size_t first = err.find("cannot be used");
    ASSERT_NE(first, std::string::npos) << err;
    EXPECT_EQ(err.find("cannot be used", first + 1), std::string::npos) << "one warning: " << err;
    EXPECT_NE(err.find("in memory only"), std::string::npos);
}

TEST(DiskCache, ManyThreadsCompileAndLoadTogether) {
    CacheFolder folder;
    clear_cache();
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    for (int i = 0; i < 6; i++)
        ts.emplace_back([&, i] {
            try {
                run_blur(50 + i % 3, 6);
            } catch (...) {
                failures++;
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(folder.entries().size(), 3u);
    for (auto &f : folder.entries()) EXPECT_EQ(f.find(".tmp-"), std::string::npos) << "temporary file left: " << f;
}

/** Run as a child process by ConcurrentProcessesShareOneEntry (skipped otherwise). */
TEST(DiskCache, ChildProcess) {
    if (!std::getenv("WEFT_DISK_CACHE_CHILD")) GTEST_SKIP() << "run by DiskCache.ConcurrentProcessesShareOneEntry";
    run_blur(61, 17);
    std::ofstream(std::string(std::getenv("WEFT_DISK_CACHE_CHILD")), std::ios::app)
        << cache_stats().compilations << " " << cache_stats().disk_hits << "\n";
}

TEST(DiskCache, ConcurrentProcessesShareOneEntry) {
    CacheFolder folder;
    std::string report = folder.dir + "/report";
    // The child's environment, made before fork (the child only calls exec).
    std::vector<std::string> env_strings = {"WEFT_DISK_CACHE_CHILD=" + report, "WEFT_CACHE_DIR=" + folder.dir};
    for (char **e = environ; *e; e++)
        if (std::strncmp(*e, "WEFT_CACHE_DIR=", 15) != 0 && std::strncmp(*e, "GTEST_", 6) != 0)
            env_strings.push_back(*e);
    std::vector<char *> envp;
    for (auto &e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    auto spawn = [&] {
        pid_t pid = fork();
        if (pid == 0) {
            execle("/proc/self/exe", "weft_tests", "--gtest_filter=DiskCache.ChildProcess", (char *)nullptr, envp.data());
            _exit(127);
        }
        return pid;
    };
    auto wait_ok = [](pid_t pid) {
        int status = 0;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    };
    // Two at once, both compiling (neither finds the other's entry yet, or one does).
    pid_t p1 = spawn(), p2 = spawn();
    ASSERT_GT(p1, 0);
    ASSERT_GT(p2, 0);
    EXPECT_TRUE(wait_ok(p1));
    EXPECT_TRUE(wait_ok(p2));
    auto files = folder.entries();
    ASSERT_EQ(files.size(), 1u) << "one entry, no temporary file left";
    // A third process loads it.
    EXPECT_TRUE(wait_ok(spawn()));
    std::ifstream in(report);
    std::vector<std::pair<int, int>> runs;
    int c, h;
    while (in >> c >> h) runs.push_back({c, h});
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[2].first, 0) << "the third process compiled nothing";
    EXPECT_EQ(runs[2].second, 1);
}

}  // namespace
