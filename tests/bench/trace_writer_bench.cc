// trace_writer_bench: what TraceWriter costs per record and writes per record, plain
// and zstd-compressed, on the records of a real trace (tests/bench/trace_files.py).
//
//   trace_writer_bench TRACE [ROUNDS]
//
// TRACE is a plain-text trace; its records are parsed once, then written ROUNDS times
// (default 5) through a plain and a compressed TraceWriter into a scratch directory.
// Prints, per format, the best round: records, bytes, bytes per record, ns per record
// (the writer's own time: formatting, buffering, compression, write(2)).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "core/trace_writer.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_writer_bench TRACE [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  std::ifstream in(argv[1]);
  std::string line;
  if (!std::getline(in, line) || line.rfind(ft::kTraceMagic, 0) != 0) {
    std::fprintf(stderr, "trace_writer_bench: %s: not a plain-text trace\n", argv[1]);
    return 1;
  }
  std::vector<ft::TraceRecord> records;
  ft::RecordParser parser;
  while (std::getline(in, line)) {
    ft::TraceRecord r;
    if (parser.parse(line, r)) records.push_back(std::move(r));
  }
  char dir[] = "/tmp/trace_writer_bench.XXXXXX";
  if (!::mkdtemp(dir)) return 1;
  std::printf("%-6s %10s %12s %10s %10s\n", "format", "records", "bytes", "B/record", "ns/record");
  for (auto format : {ft::TraceWriter::Format::kPlain, ft::TraceWriter::Format::kZstd}) {
    std::string path = std::string(dir) + "/t" + ft::TraceWriter::extension(format);
    double best = 1e300;
    uint64_t bytes = 0;
    for (int round = 0; round < rounds; ++round) {
      std::vector<ft::TraceRecord> copy = records;
      auto start = std::chrono::steady_clock::now();
      {
        auto w = ft::TraceWriter::create(path, format);
        if (!w) {
          std::fprintf(stderr, "trace_writer_bench: %s\n", w.error().message.c_str());
          return 1;
        }
        for (auto& r : copy) (*w)->write(r);
      }  // flushed, frame ended, published
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      struct stat st {};
      ::stat(path.c_str(), &st);
      bytes = static_cast<uint64_t>(st.st_size);
      if (ns < best) best = ns;
    }
    double n = records.empty() ? 1.0 : static_cast<double>(records.size());
    std::printf("%-6s %10zu %12llu %10.1f %10.1f\n", format == ft::TraceWriter::Format::kZstd ? "zstd" : "plain",
                records.size(), static_cast<unsigned long long>(bytes), static_cast<double>(bytes) / n, best / n);
    ::unlink(path.c_str());
  }
  ::rmdir(dir);
  return 0;
}
