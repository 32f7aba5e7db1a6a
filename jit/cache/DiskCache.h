// The persistent cache: compiled code kept on disk between processes, in WEFT_CACHE_DIR
// (default $XDG_CACHE_HOME/weft, else ~/.cache/weft; "off" disables it), one file per key under
// a folder per kind ("kernels"; the tuning database beside it). Each file: a header naming the
// key and the versions of what wrote it, the code as named sections, an XXH3 checksum. Written
// atomically (temporary file, then rename); a truncated, corrupted, foreign or stale file is
// ignored (and replaced by the next write), never loaded. The folder is bounded by
// WEFT_CACHE_MAX_MB (default 512): least recently used files go first. A folder that cannot be
// written leaves the cache in memory, with one warning.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace weft {
namespace internal {

/** Compiled code as named byte strings (object code, symbol names, cubins, ...). */
using CodeSections = std::map<std::string, std::string>;

/** The folder in use, or "" when the disk cache is off (WEFT_CACHE_DIR=off, or the folder
    could not be made or written: then a warning, once per folder). Read from the environment
    at each call. */
std::string disk_cache_dir();

/** Reads the entry of key in kind's folder: true with its sections, where a good entry written
    by `versions` is there (it is then the most recently used). A bad one is ignored; with
    debug, stderr says why (and a miss, and a hit). */
bool disk_cache_load(const std::string &kind, const std::string &key, const std::string &versions, CodeSections &out,
                     bool debug);
/** Writes key's entry atomically, then trims the folder to its bound. True when written. */
bool disk_cache_store(const std::string &kind, const std::string &key, const std::string &versions,
                      const CodeSections &code, bool debug);

/** A short hex digest (XXH3-128) of s: file names and content fingerprints. */
std::string digest(const std::string &s);

// The file format, exposed for the tests.
/** The path of key's entry in kind's folder of dir. */
std::string disk_cache_path(const std::string &dir, const std::string &kind, const std::string &key);
std::string encode_cache_entry(const std::string &key, const std::string &versions, const CodeSections &code);
/** "" when bytes are a good entry for key written by versions (sections in out), else why not. */
std::string decode_cache_entry(const std::string &bytes, const std::string &key, const std::string &versions,
                               CodeSections &out);
/** The key and versions an entry's header names (false where it has no readable header). */
bool peek_cache_entry(const std::string &bytes, std::string &key, std::string &versions);
/** The bound on the folder's size in bytes (WEFT_CACHE_MAX_MB, in megabytes, may be fractional). */
uint64_t disk_cache_max_bytes();

}  // namespace internal
}  // namespace weft
