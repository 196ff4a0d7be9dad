// Parallel decoding of multistream bzip2 files (Wikimedia's *-multistream.xml.bz2: thousands of
// independent bzip2 streams back to back). A reader thread cuts the compressed file at stream starts
// into segments of about 1 MB, `threads` decoders inflate them concurrently, and read() returns the
// bytes in file order, so callers see the same byte stream as from open_input().
//
// Stream starts are found by their byte-aligned header: "BZh" + level digit + the 48-bit block (or
// end-of-stream) magic; a false match inside compressed data would need an 80-bit coincidence.
#pragma once

#include <memory>
#include <string>

#include "common/io/input.h"

namespace suite {

// Like open_input(path), but a regular file holding several bzip2 streams within its first 16 MB is
// decoded on `threads` threads. Anything else (stdin, single-stream bzip2, other formats, threads <= 1)
// gets open_input()'s sequential reader. Errors read the same as open_input()'s.
std::unique_ptr<Input> open_input_parallel(const std::string& path, int threads);

}  // namespace suite
