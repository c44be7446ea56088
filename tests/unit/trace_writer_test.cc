// TraceWriter (core) against TraceReader (postproc): what the engine writes is what
// the post-processor reads back, record for record, across the writer's buffer
// flushes; the file is created 0600, and has its name only once its first records
// are on disk.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <fstream>
#include <sstream>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/trace_writer.h"
#include "postproc/trace_reader.h"

namespace {

std::string temp_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/ft-writer-test-" + std::to_string(::getpid()) + "-" + name;
}

ft::TraceRecord make(uint64_t i) {
  ft::TraceRecord r;
  r.tid = 100 + static_cast<int64_t>(i % 3);
  r.ts_ns = 1000 + i * 7;
  if (i == 0) {
    r.type = "header";
    r.add("format", int64_t{1}).add("arch", std::string("x86_64")).add("pid", int64_t{100});
    r.add("exe", std::string("/bin/prog with space")).add("cmdline", std::string("prog 'a b'"));
    return r;
  }
  r.type = i % 2 ? "call" : "return";
  r.add("function", "fn_" + std::to_string(i % 17) + "\n\"quoted\"\x01");
  r.add("address", ft::Hex{0x400000 + i});
  r.add("depth", static_cast<int64_t>(i % 5));
  if (i % 2)
    r.add("args", ft::HexList{i, 0, ~uint64_t{0}, 3, 4, 5});
  else
    r.add("retval", ft::Hex{static_cast<uint64_t>(-static_cast<int64_t>(i))});
  return r;
}

TEST(TraceWriter, RoundTripThroughTheReader) {
  const std::string path = temp_path("roundtrip.trace");
  const uint64_t n = 20000;  // several buffer flushes
  std::vector<ft::TraceRecord> written;
  {
    auto w = ft::TraceWriter::create(path);
    ASSERT_TRUE(w.ok()) << w.error().message;
    for (uint64_t i = 0; i < n; ++i) {
      ft::TraceRecord r = make(i);
      (*w)->write(r);
      written.push_back(r);
    }
    ft::TraceRecord end;
    end.type = "exit";
    end.tid = 100;
    end.ts_ns = 1000 + n * 7;
    end.add("status", int64_t{0});
    (*w)->write(end);
    written.push_back(end);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  ft::post::CollectingDiagnostics diag;
  auto reader = ft::post::TraceReader::open(path, diag);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  size_t i = 0;
  while (const ft::TraceRecord* r = reader->next()) {
    ASSERT_LT(i, written.size());
    EXPECT_EQ(*r, written[i]) << "record " << i;
    EXPECT_EQ(r->seq, i + 1);
    ++i;
  }
  EXPECT_EQ(i, written.size());
  EXPECT_TRUE(reader->complete());
  EXPECT_TRUE(diag.warnings.empty());
  EXPECT_EQ(reader->pid(), 100);
  ::unlink(path.c_str());
}

// The records a reader gets from `path`, and its warnings.
std::vector<ft::TraceRecord> read_back(const std::string& path, std::vector<std::string>* warnings = nullptr) {
  ft::post::CollectingDiagnostics diag;
  std::vector<ft::TraceRecord> out;
  auto reader = ft::post::TraceReader::open(path, diag);
  EXPECT_TRUE(reader.ok()) << (reader.ok() ? "" : reader.error().message);
  if (!reader.ok()) return out;
  while (const ft::TraceRecord* r = reader->next()) out.push_back(*r);
  if (warnings) *warnings = diag.warnings;
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Backtraces (format 2): each distinct call stack is written once, as a `stack`
// record before the first record that has it; records refer to it by id; the reader
// gives every record its frames back, whichever way it was written (a TraceRecord, or
// field by field as plugins' records are).
TEST(TraceWriter, CallStacksAreWrittenOnceAndReadBackWhole) {
  const std::string path = temp_path("stacks.trace");
  const std::vector<ft::HexList> stacks = {
      {0x401234, 0x401300, 0x7f0000012345},
      {0x401234, 0x401300},  // a prefix of the first
      {0x401234, 0x401301, 0x7f0000012345},
  };
  std::vector<ft::TraceRecord> written;
  {
    auto w = ft::TraceWriter::create(path);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ft::TraceRecord header = make(0);
    (*w)->write(header);
    written.push_back(header);
    for (uint64_t i = 0; i < 300; ++i) {
      ft::TraceRecord r;
      r.tid = 100;
      r.ts_ns = 2000 + i;
      r.type = "alloc";
      r.add("function", std::string("malloc")).add("size", static_cast<int64_t>(i));
      const ft::HexList& frames = stacks[(i * 7) % stacks.size()];
      r.add("frames", frames);
      if (i % 2) {
        ft::TraceRecord copy = r;
        (*w)->write(r);
        copy.seq = r.seq;
        written.push_back(copy);
        continue;
      }
      uint64_t id = (*w)->stack_ref(r.tid, r.ts_ns, frames.data(), frames.size());
      ASSERT_NE(id, 0u);
      (*w)->write_line(r.tid, r.ts_ns, r.type, [&](ft::LineAppender& line) {
        line.str("function", "malloc");
        line.integer("size", static_cast<int64_t>(i));
        line.integer("stack", static_cast<int64_t>(id));
      });
      r.seq = (*w)->records();
      written.push_back(r);
    }
    EXPECT_EQ((*w)->stacks(), stacks.size());
  }
  std::string text = file_bytes(path);
  EXPECT_EQ(text.rfind("functracer-trace 2\n", 0), 0u);
  size_t stack_lines = 0, refs = 0, inline_frames = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" stack id=") != std::string::npos) ++stack_lines;
    if (line.find(" alloc ") != std::string::npos) {
      refs += line.find(" stack=") != std::string::npos;
      inline_frames += line.find("frames=") != std::string::npos;
    }
  }
  EXPECT_EQ(stack_lines, stacks.size());
  EXPECT_EQ(refs, 300u);
  EXPECT_EQ(inline_frames, 0u);

  std::vector<std::string> warnings;
  std::vector<ft::TraceRecord> got = read_back(path, &warnings);
  ASSERT_EQ(got.size(), written.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], written[i]) << "record " << i;
  ::unlink(path.c_str());
}

TEST(TraceWriter, CompressedRoundTrip) {
  const std::string path = temp_path("roundtrip.trace.zst");
  std::vector<ft::TraceRecord> written;
  {
    auto w = ft::TraceWriter::create(path, ft::TraceWriter::Format::kZstd);
    ASSERT_TRUE(w.ok()) << w.error().message;
    for (uint64_t i = 0; i < 20000; ++i) {
      ft::TraceRecord r = make(i);
      (*w)->write(r);
      written.push_back(r);
    }
  }
  std::string bytes = file_bytes(path);
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\x28\xb5\x2f\xfd"));  // zstd frame magic
  std::vector<std::string> warnings;
  EXPECT_EQ(read_back(path, &warnings), written);
  ::unlink(path.c_str());
}

// While the writer is open (its frame not ended), the file holds everything up to the
// last flush, readable: a copy taken then is what a killed functracer leaves.
TEST(TraceWriter, CompressedFileReadsUpToEachFlush) {
  const std::string path = temp_path("open.trace.zst");
  const std::string copy = temp_path("copy.trace.zst");
  auto w = ft::TraceWriter::create(path, ft::TraceWriter::Format::kZstd);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE((*w)->publish().ok());
  std::vector<ft::TraceRecord> written;
  for (uint64_t i = 0; i < 3000; ++i) {
    ft::TraceRecord r = make(i);
    (*w)->write(r);
    written.push_back(r);
    if (i % 700 == 699) {
      (*w)->flush();
      std::ofstream(copy, std::ios::binary) << file_bytes(path);
      std::vector<std::string> warnings;
      EXPECT_EQ(read_back(copy, &warnings), written) << "after record " << i;
      bool said_cut = false;
      for (const auto& m : warnings) said_cut = said_cut || m.find("cut short") != std::string::npos;
      EXPECT_TRUE(said_cut) << "no warning that the trace was cut short";
    }
  }
  w->reset();
  ::unlink(path.c_str());
  ::unlink(copy.c_str());
}

TEST(TraceWriter, RenameBeforeAndAfterPublishing) {
  const std::string a = temp_path("sh.1.trace"), b = temp_path("ls.1.trace"), c = temp_path("head.1.trace");
  auto w = ft::TraceWriter::create(a);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE((*w)->rename_to(b).ok());  // not published yet: the name it will take
  ft::TraceRecord r = make(0);
  (*w)->write(r);
  ASSERT_TRUE((*w)->publish().ok());
  EXPECT_NE(::access(a.c_str(), F_OK), 0);
  EXPECT_EQ(::access(b.c_str(), F_OK), 0);
  ASSERT_TRUE((*w)->rename_to(c).ok());  // published: renamed on disk
  ft::TraceRecord r2 = make(1);
  (*w)->write(r2);
  w->reset();
  EXPECT_NE(::access(b.c_str(), F_OK), 0);
  EXPECT_EQ(read_back(c).size(), 2u);
  ::unlink(c.c_str());
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}

TEST(TraceWriter, TheNameNeverStandsForAnEmptyFile) {
  std::string dir = temp_path("publish");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::string path = dir + "/p.1.trace";
  {
    std::ofstream old(path);
    old << "an old trace of a reused pid\n";
  }
  auto w = ft::TraceWriter::create(path);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ft::TraceRecord r = make(0);
  (*w)->write(r);
  // Until published, the old file keeps the name and the new one is hidden.
  std::ifstream before(path);
  std::stringstream old_text;
  old_text << before.rdbuf();
  EXPECT_EQ(old_text.str(), "an old trace of a reused pid\n");
  EXPECT_EQ(entries(dir).size(), 2u);
  ASSERT_TRUE((*w)->publish().ok());
  auto names = entries(dir);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "p.1.trace");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GT(st.st_size, 0);  // the magic line and the header, before any later flush
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  (*w).reset();
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// The file system refuses writes past `bytes` (EFBIG, as functracer gets it with
// SIGXFSZ ignored) while it lives: a full disk, deterministically.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit l = old_;
    l.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &l);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

struct Closed {
  uint64_t records = 0, on_disk = 0, bytes = 0;
  int error = 0;
  bool kept = true;
  std::string path;
};

// A write error cuts the file back to its last whole record (plain) or buffer
// (compressed): it holds exactly records_on_disk() records, the first ones written,
// readable, and said to be cut short; the writer goes on counting the records it is
// given.
void cut_by_a_write_error(const char* name, ft::TraceWriter::Format format) {
  const std::string path = temp_path(name);
  const uint64_t n = 60000;  // far more than the limit holds
  std::vector<ft::TraceRecord> written;
  Closed closed;
  {
    auto w = ft::TraceWriter::create(path, format);
    ASSERT_TRUE(w.ok()) << w.error().message;
    (*w)->on_close([&](const ft::TraceWriter& tw) {
      closed = {tw.records(), tw.records_on_disk(), tw.bytes_written(), tw.write_error(), tw.kept(), tw.path()};
    });
    FileSizeLimit limit(256 * 1024 + 1000);  // the magic line, then a part of a record past the first flush
    for (uint64_t i = 0; i < n; ++i) {
      ft::TraceRecord r = make(i);
      (*w)->write(r);
      written.push_back(r);
      if (i == 0) {
        ASSERT_TRUE((*w)->publish().ok());
      }
    }
    (*w)->flush();
    EXPECT_EQ((*w)->write_error(), EFBIG);
    w->reset();
  }
  EXPECT_EQ(closed.records, n);
  EXPECT_EQ(closed.error, EFBIG);
  EXPECT_TRUE(closed.kept);
  EXPECT_GT(closed.on_disk, 1u);
  EXPECT_LT(closed.on_disk, n);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), closed.bytes);
  EXPECT_LE(closed.bytes, 256u * 1024 + 1000);
  std::vector<std::string> warnings;
  std::vector<ft::TraceRecord> got = read_back(path, &warnings);
  written.resize(closed.on_disk);
  EXPECT_EQ(got, written);
  bool said_cut = false;
  for (const auto& m : warnings) {
    said_cut = said_cut || m.find("without an exit, detach or killed record") != std::string::npos;
    EXPECT_EQ(m.find("the last line is incomplete"), std::string::npos) << m;  // cut on a record boundary
  }
  EXPECT_TRUE(said_cut);
  ::unlink(path.c_str());
}

TEST(TraceWriter, AWriteErrorCutsAPlainTraceAtItsLastWholeRecord) {
  cut_by_a_write_error("cut.trace", ft::TraceWriter::Format::kPlain);
}

TEST(TraceWriter, AWriteErrorCutsACompressedTraceAtItsLastWholeBuffer) {
  cut_by_a_write_error("cut.trace.zst", ft::TraceWriter::Format::kZstd);
}

// Not a byte can be written (the disk was full from the start): no file is left, not
// even an empty one, and an old trace of the name stays as it was.
TEST(TraceWriter, NoFileIsLeftWhenNothingCanBeWritten) {
  for (auto format : {ft::TraceWriter::Format::kPlain, ft::TraceWriter::Format::kZstd}) {
    std::string dir = temp_path(format == ft::TraceWriter::Format::kPlain ? "full" : "full-zst");
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    std::string path = dir + "/p.1.trace";
    std::ofstream(path) << "an old trace of a reused pid\n";
    Closed closed;
    {
      auto w = ft::TraceWriter::create(path, format);
      ASSERT_TRUE(w.ok()) << w.error().message;
      (*w)->on_close([&](const ft::TraceWriter& tw) {
        closed = {tw.records(), tw.records_on_disk(), tw.bytes_written(), tw.write_error(), tw.kept(), tw.path()};
      });
      FileSizeLimit limit(0);
      ft::TraceRecord r = make(0);
      (*w)->write(r);
      EXPECT_TRUE((*w)->publish().ok());
      EXPECT_FALSE((*w)->kept());
      for (uint64_t i = 1; i < 1000; ++i) {
        ft::TraceRecord more = make(i);
        (*w)->write(more);
      }
      w->reset();
    }
    EXPECT_EQ(closed.records, 1000u);
    EXPECT_EQ(closed.on_disk, 0u);
    EXPECT_EQ(closed.error, EFBIG);
    EXPECT_FALSE(closed.kept);
    EXPECT_EQ(entries(dir), std::vector<std::string>{"p.1.trace"});  // no temporary file left either
    EXPECT_EQ(file_bytes(path), "an old trace of a reused pid\n");
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
}

TEST(TraceWriter, RefusesASymbolicLinkInTheWay) {
  std::string path = temp_path("link.trace");
  ASSERT_EQ(::symlink("/nonexistent-target", path.c_str()), 0);
  auto w = ft::TraceWriter::create(path);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("symbolic link"), std::string::npos);
  ::unlink(path.c_str());
}

TEST(TraceWriter, CannotCreateNamesThePath) {
  auto w = ft::TraceWriter::create("/nonexistent-dir/x.trace");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("/nonexistent-dir/x.trace"), std::string::npos);
}

}  // namespace
