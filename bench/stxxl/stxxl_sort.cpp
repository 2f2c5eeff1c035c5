// stxxl_sort: sorts a file of native-endian u32 with STXXL, the peer of
// `emsort bench sort` on u32 inputs (see README.md beside this file).
//
//   stxxl_sort INPUT OUTPUT MEMORY_BYTES TEMP_DIR [THREADS [FILEIO]]
//
// INPUT is read with large read() calls and pushed into an stxxl::sorter
// (STXXL's pipelined sorter: stream::runs_creator, then stream::runs_merger
// on the fly), whose sorted stream is written to OUTPUT as plain binary
// u32 and fsync'ed. The data thus go through the disk twice, as in emsort:
// runs are written once and read once by a single merge where M allows.
//
// MEMORY_BYTES is STXXL's memory_to_use, given to the run creator and then
// to the merger (never both at once). STXXL's block size is its default,
// 2 MiB, or when M is smaller than 64 of those the largest of 1 MiB,
// 256 KiB, 64 KiB, 16 KiB, 4 KiB at most M / 64, so that one merge of all
// runs fits where emsort's would (STXXL refuses to merge with fewer than a
// handful of blocks).
// STXXL's scratch "disk" is one autogrowing file in TEMP_DIR, opened with
// O_DIRECT and unlinked as soon as it is open, so nothing is left behind
// even if the driver is killed. FILEIO is STXXL's I/O implementation:
// syscall (default) or linuxaio. THREADS sets OpenMP's threads (STXXL's
// parallel in-memory sort and multiway merge); 0 or absent leaves the
// OpenMP default (OMP_NUM_THREADS, else every core). The harness also sets
// OMP_WAIT_POLICY=passive: on 2 cores, OpenMP threads spinning between
// STXXL's per-block parallel merges starve its I/O threads (4-6x slower).
// STXXL_SORT_MERGE=native in the environment merges with STXXL's own
// sequential loser tree instead of the parallel multiway merge (its default).
//
// On success the last line on standard output is
//   stxxl_sort: seconds=S run_formation_s=R merge_s=W items=N block=B threads=T fileio=F version=V
// (STXXL itself may print other lines before it). On failure a message goes
// to standard error and the exit status is 1 (2 for bad arguments).

#include <stxxl/sorter>
#include <stxxl/version.h>

#include <fcntl.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct U32Less {
    bool operator()(const std::uint32_t& a, const std::uint32_t& b) const { return a < b; }
    std::uint32_t min_value() const { return std::numeric_limits<std::uint32_t>::min(); }
    std::uint32_t max_value() const { return std::numeric_limits<std::uint32_t>::max(); }
};

// The driver's own I/O buffers (input and output), outside STXXL's M.
const std::size_t kIoBuffer = 1 << 20;

double now() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

struct Phases {
    double run_formation = 0, merge = 0;
    std::uint64_t items = 0;
};

template <unsigned Block>
Phases sort_file(const char* input, const char* output, std::uint64_t memory) {
    typedef stxxl::sorter<std::uint32_t, U32Less, Block> sorter_type;
    Phases ph;
    double t0 = now();
    int in = ::open(input, O_RDONLY | O_CLOEXEC);
    if (in < 0) fail(std::string("cannot open ") + input);
    ::posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
    struct stat st;
    if (::fstat(in, &st) != 0) fail(std::string("cannot stat ") + input);
    if (st.st_size % 4 != 0)
        throw std::runtime_error(std::string(input) + ": size is not a multiple of 4 bytes");
    sorter_type sorter(U32Less(), static_cast<stxxl::unsigned_type>(memory));
    std::vector<std::uint32_t> buf(kIoBuffer / 4);
    for (;;) {
        ssize_t n = ::read(in, buf.data(), kIoBuffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(std::string("cannot read ") + input);
        }
        if (n == 0) break;
        if (n % 4 != 0) {  // a short read in the middle of an item: finish it
            ssize_t more = 4 - n % 4;
            ssize_t m = ::read(in, reinterpret_cast<char*>(buf.data()) + n, more);
            if (m != more) fail(std::string("short read of ") + input);
            n += more;
        }
        std::size_t k = static_cast<std::size_t>(n) / 4;
        for (std::size_t i = 0; i < k; ++i) sorter.push(buf[i]);
        ph.items += k;
    }
    ::close(in);
    sorter.sort();  // the last run is sorted and written, the merger set up
    double t1 = now();
    ph.run_formation = t1 - t0;

    int out = ::open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) fail(std::string("cannot create ") + output);
    std::size_t fill = 0;
    auto flush = [&]() {
        const char* p = reinterpret_cast<const char*>(buf.data());
        std::size_t left = fill * 4;
        while (left > 0) {
            ssize_t w = ::write(out, p, left);
            if (w < 0) {
                if (errno == EINTR) continue;
                fail(std::string("cannot write ") + output);
            }
            p += w;
            left -= static_cast<std::size_t>(w);
        }
        fill = 0;
    };
    const std::size_t cap = buf.size();
    while (!sorter.empty()) {
        buf[fill++] = *sorter;
        ++sorter;
        if (fill == cap) flush();
    }
    flush();
    sorter.finish_clear();
    if (::fsync(out) != 0) fail(std::string("cannot fsync ") + output);
    if (::close(out) != 0) fail(std::string("cannot close ") + output);
    ph.merge = now() - t1;
    return ph;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5 || argc > 7) {
        std::fprintf(stderr,
                     "usage: %s INPUT OUTPUT MEMORY_BYTES TEMP_DIR [THREADS [syscall|linuxaio]]\n",
                     argv[0]);
        return 2;
    }
    const char* input = argv[1];
    const char* output = argv[2];
    char* end = nullptr;
    unsigned long long memory = std::strtoull(argv[3], &end, 10);
    if (end == argv[3] || *end != '\0' || memory == 0) {
        std::fprintf(stderr, "stxxl_sort: MEMORY_BYTES must be a positive number, not '%s'\n", argv[3]);
        return 2;
    }
    std::string temp_dir = argv[4];
    int threads = argc > 5 ? std::atoi(argv[5]) : 0;
    std::string fileio = argc > 6 ? argv[6] : "syscall";
    if (fileio != "syscall" && fileio != "linuxaio") {
        std::fprintf(stderr, "stxxl_sort: FILEIO must be syscall or linuxaio, not '%s'\n", fileio.c_str());
        return 2;
    }
    if (threads > 0) omp_set_num_threads(threads);
    if (const char* m = std::getenv("STXXL_SORT_MERGE")) {
        if (std::string(m) == "native") stxxl::SETTINGS::native_merge = true;
    }
    // STXXL writes stxxl.log and stxxl.errlog into the current directory
    // unless told otherwise; errors also go to standard error.
    ::setenv("STXXLLOGFILE", "/dev/null", 0);
    ::setenv("STXXLERRLOGFILE", "/dev/null", 0);
    try {
        if (stxxl::check_library_version() != 0)
            throw std::runtime_error(std::string("STXXL headers ") + stxxl::get_version_string() +
                                     " do not match the library " +
                                     stxxl::get_library_version_string());
        // One scratch file, grown as needed, O_DIRECT, unlinked once open.
        std::string path = temp_dir + "/stxxl_sort." + std::to_string(::getpid()) + ".tmp";
        stxxl::disk_config disk(path, 0, fileio + " direct=on unlink autogrow");
        stxxl::config::get_instance()->add_disk(disk);

        Phases ph;
        unsigned block;
        if (memory >= 64ull * (2u << 20)) {
            block = 2u << 20;
            ph = sort_file<(2u << 20)>(input, output, memory);
        } else if (memory >= 64ull * (1u << 20)) {
            block = 1u << 20;
            ph = sort_file<(1u << 20)>(input, output, memory);
        } else if (memory >= 64ull * (256u << 10)) {
            block = 256u << 10;
            ph = sort_file<(256u << 10)>(input, output, memory);
        } else if (memory >= 64ull * (64u << 10)) {
            block = 64u << 10;
            ph = sort_file<(64u << 10)>(input, output, memory);
        } else if (memory >= 64ull * (16u << 10)) {
            block = 16u << 10;
            ph = sort_file<(16u << 10)>(input, output, memory);
        } else {
            block = 4u << 10;
            ph = sort_file<(4u << 10)>(input, output, memory);
        }
        std::printf(
            "stxxl_sort: seconds=%.6f run_formation_s=%.6f merge_s=%.6f items=%llu block=%u threads=%d "
            "fileio=%s version=%s\n",
            ph.run_formation + ph.merge, ph.run_formation, ph.merge,
            static_cast<unsigned long long>(ph.items), block, omp_get_max_threads(), fileio.c_str(),
            stxxl::get_library_version_string());
        std::fflush(stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stxxl_sort: %s\n", e.what());
        return 1;
    }
    return 0;
}
