// The nccl-tests reader on the public runs in tests/data/nccl-tests/
// (SOURCES.md there says where each comes from): every file parses, the row
// count and the first and last rows are those of the file (typed in here),
// and busbw recomputed from the time with nccl-tests' factor matches the
// printed busbw within the printed rounding, row by row, independently of the
// reader's own checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/nccl_sizes.h"
#include "reports/inputs.h"
#include "reports/nccl_tests.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

struct Figures {
  double time, algbw, busbw;
};

struct DataFile {
  const char* name;
  Collective collective;
  int ranks;          // as the run had them
  bool ranks_needed;  // the file's nThread x nGpus is not the rank count (one process per GPU)
  int table_rows;
  const char* dtype;
  std::int64_t first_bytes, first_count;
  Figures first_oop, first_ip;
  std::int64_t last_bytes, last_count;
  Figures last_oop, last_ip;
  double avg_busbw;  // -1: the file has no "# Avg bus bandwidth" line
};

const DataFile kFiles[] = {
    {"h100x16_2node_allreduce_ring_nccl-tests-issue309-gjaion-minctas24-qps2.txt",
     Collective::all_reduce,
     16,
     true,
     14,
     "float",
     1048576,
     262144,
     {156.9, 6.68, 12.53},
     {154.1, 6.81, 12.76},
     8589934592,
     2147483648,
     {41015, 209.43, 392.69},
     {41056, 209.22, 392.30},
     248.186},
    {"h100x80_10node_allreduce_xxrjun-cluster01.txt",
     Collective::all_reduce,
     80,
     true,
     10,
     "double",
     33554432,
     4194304,
     {798.52, 42.02, 82.99},
     {857.09, 39.15, 77.32},
     17179869184,
     2147483648,
     {105854, 162.30, 320.54},
     {105146, 163.39, 322.70},
     265.631},
    {"h100x80_10node_allgather_xxrjun-cluster01.txt",
     Collective::all_gather,
     80,
     true,
     10,
     "double",
     33553920,
     52428,
     {682.20, 49.19, 48.57},
     {672.05, 49.93, 49.30},
     17179868160,
     26843544,
     {52314.1, 328.40, 324.29},
     {52531.4, 327.04, 322.95},
     218.677},
    {"h100x80_10node_alltoall_xxrjun-cluster01.txt",
     Collective::all_to_all,
     80,
     true,
     10,
     "double",
     33553920,
     52428,
     {970.33, 34.58, 34.15},
     {980.59, 34.22, 33.79},
     17179868160,
     26843544,
     {336737, 51.02, 50.38},
     {335382, 51.22, 50.58},
     47.1472},
    {"h100x80_10node_reducescatter_xxrjun-cluster01.txt",
     Collective::reduce_scatter,
     80,
     true,
     10,
     "double",
     33553920,
     52428,
     {689.11, 48.69, 48.08},
     {742.89, 45.17, 44.60},
     17179868160,
     26843544,
     {52458.7, 327.49, 323.40},
     {52777.8, 325.51, 321.44},
     216.683},
    {"h100x8_allgather_ring_together-nccl-tests.txt",
     Collective::all_gather,
     8,
     false,
     31,
     "float",
     0,
     0,
     {0.89, 0.00, 0.00},
     {0.95, 0.00, 0.00},
     8589934592,
     268435456,
     {20935.4, 410.31, 359.02},
     {20681.9, 415.34, 363.42},
     110.727},
    {"h100x8_allgather_xxrjun-cluster01-cnode3-002.txt",
     Collective::all_gather,
     8,
     true,
     10,
     "double",
     33554432,
     524288,
     {123.44, 271.83, 237.85},
     {120.61, 278.20, 243.43},
     17179869184,
     268435456,
     {41542.0, 413.55, 361.86},
     {41068.7, 418.32, 366.03},
     328.618},
    {"h100x8_allreduce_nvls_together-nccl-tests.txt",
     Collective::all_reduce,
     8,
     false,
     31,
     "float",
     8,
     2,
     {36.22, 0.00, 0.00},
     {35.03, 0.00, 0.00},
     8589934592,
     2147483648,
     {31372.3, 273.81, 479.16},
     {31327.3, 274.20, 479.85},
     145.92},
    {"h100x8_allreduce_ring_together-nccl-tests.txt",
     Collective::all_reduce,
     8,
     false,
     31,
     "float",
     8,
     2,
     {37.33, 0.00, 0.00},
     {37.79, 0.00, 0.00},
     8589934592,
     2147483648,
     {40848.8, 210.29, 368.00},
     {40841.7, 210.32, 368.06},
     123.035},
    {"h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt",
     Collective::all_reduce,
     8,
     true,
     10,
     "double",
     33554432,
     4194304,
     {182.87, 183.49, 321.10},
     {182.88, 183.48, 321.08},
     17179869184,
     2147483648,
     {62340.7, 275.58, 482.27},
     {62359.0, 275.50, 482.12},
     437.957},
    {"h100x8_alltoall_xxrjun-cluster01-cnode3-002.txt",
     Collective::all_to_all,
     8,
     true,
     10,
     "double",
     33554432,
     524288,
     {124.79, 268.89, 235.28},
     {123.64, 271.39, 237.47},
     17179869184,
     268435456,
     {43193.3, 397.74, 348.03},
     {43289.4, 396.86, 347.25},
     313.838},
    {"h100x8_reducescatter_nvls_together-nccl-tests.txt",
     Collective::reduce_scatter,
     8,
     false,
     31,
     "float",
     0,
     0,
     {0.94, 0.00, 0.00},
     {0.92, 0.00, 0.00},
     8589934592,
     268435456,
     {20767.1, 413.63, 361.93},
     {20643.2, 416.11, 364.10},
     111.49},
    {"h100x8_reducescatter_xxrjun-cluster01-cnode3-002.txt",
     Collective::reduce_scatter,
     8,
     true,
     10,
     "double",
     33554432,
     524288,
     {111.83, 300.05, 262.55},
     {111.63, 300.58, 263.01},
     17179869184,
     268435456,
     {41211.4, 416.87, 364.76},
     {41174.3, 417.25, 365.09},
     330.721},
    {"h100x10_10node-1pernode_allreduce_xxrjun-cluster01.txt",
     Collective::all_reduce,
     10,
     true,
     10,
     "double",
     33554432,
     4194304,
     {1405.25, 23.88, 42.98},
     {1406.35, 23.86, 42.95},
     17179869184,
     2147483648,
     {632480, 27.16, 48.89},
     {632577, 27.16, 48.89},
     47.8165},
    {"h100x10_10node-1pernode_allgather_xxrjun-cluster01.txt",
     Collective::all_gather,
     10,
     true,
     10,
     "double",
     33554400,
     419430,
     {721.94, 46.48, 41.83},
     {687.61, 48.80, 43.92},
     17179869120,
     214748364,
     {321112, 53.50, 48.15},
     {317424, 54.12, 48.71},
     46.7949},
    {"h100x10_10node-1pernode_alltoall_xxrjun-cluster01.txt",
     Collective::all_to_all,
     10,
     true,
     10,
     "double",
     33554400,
     419430,
     {792.60, 42.33, 38.10},
     {762.45, 44.01, 39.61},
     17179869120,
     214748364,
     {346210, 49.62, 44.66},
     {345521, 49.72, 44.75},
     43.6048},
    {"h100x10_10node-1pernode_reducescatter_xxrjun-cluster01.txt",
     Collective::reduce_scatter,
     10,
     true,
     10,
     "double",
     33554400,
     419430,
     {710.67, 47.21, 42.49},
     {684.49, 49.02, 44.12},
     17179869120,
     214748364,
     {316586, 54.27, 48.84},
     {317130, 54.17, 48.76},
     47.1335},
    {"h100x20_10node-2pernode_allreduce_xxrjun-cluster01.txt",
     Collective::all_reduce,
     20,
     true,
     10,
     "double",
     33554432,
     4194304,
     {787.43, 42.61, 80.96},
     {762.90, 43.98, 83.57},
     17179869184,
     2147483648,
     {333590, 51.50, 97.85},
     {335002, 51.28, 97.44},
     94.3888},
    {"h100x20_10node-2pernode_allgather_xxrjun-cluster01.txt",
     Collective::all_gather,
     20,
     true,
     10,
     "double",
     33554240,
     209714,
     {417.29, 80.41, 76.39},
     {395.65, 84.81, 80.57},
     17179869120,
     107374182,
     {167723, 102.43, 97.31},
     {166457, 103.21, 98.05},
     93.6001},
    {"h100x20_10node-2pernode_alltoall_xxrjun-cluster01.txt",
     Collective::all_to_all,
     20,
     true,
     10,
     "double",
     33554240,
     209714,
     {811.34, 41.36, 39.29},
     {777.19, 43.17, 41.02},
     17179869120,
     107374182,
     {341262, 50.34, 47.83},
     {342322, 50.19, 47.68},
     45.9521},
    {"h100x20_10node-2pernode_reducescatter_xxrjun-cluster01.txt",
     Collective::reduce_scatter,
     20,
     true,
     10,
     "double",
     33554240,
     209714,
     {422.38, 79.44, 75.47},
     {403.70, 83.12, 78.96},
     17179869120,
     107374182,
     {166835, 102.98, 97.83},
     {166055, 103.46, 98.29},
     92.747},
    {"h100x40_10node-4pernode_allreduce_xxrjun-cluster01.txt",
     Collective::all_reduce,
     40,
     true,
     10,
     "double",
     33554432,
     4194304,
     {780.92, 42.97, 83.79},
     {724.53, 46.31, 90.31},
     17179869184,
     2147483648,
     {170665, 100.66, 196.30},
     {171026, 100.45, 195.88},
     167.923},
    {"h100x40_10node-4pernode_allgather_xxrjun-cluster01.txt",
     Collective::all_gather,
     40,
     true,
     10,
     "double",
     33553920,
     104856,
     {362.42, 92.58, 90.27},
     {347.32, 96.61, 94.19},
     17179868800,
     53687090,
     {86184.2, 199.34, 194.36},
     {85169.4, 201.71, 196.67},
     172.609},
    {"h100x40_10node-4pernode_alltoall_xxrjun-cluster01.txt",
     Collective::all_to_all,
     40,
     true,
     10,
     "double",
     33553920,
     104856,
     {975.05, 34.41, 33.55},
     {845.22, 39.70, 38.71},
     17179868800,
     53687090,
     {338186, 50.80, 49.53},
     {338213, 50.80, 49.53},
     46.6689},
    {"h100x40_10node-4pernode_reducescatter_xxrjun-cluster01.txt",
     Collective::reduce_scatter,
     40,
     true,
     10,
     "double",
     33553920,
     104856,
     {397.39, 84.44, 82.33},
     {344.24, 97.47, 95.04},
     17179868800,
     53687090,
     {85733.1, 200.39, 195.38},
     {85583.0, 200.74, 195.72},
     172.857},
    // Gathered for issue 38 to measure the model only (SOURCES.md).
    {"h100x16_2node_allreduce_aws-p5-keitaw-nccl2.22.3.txt",
     Collective::all_reduce,
     16,
     true,
     32,
     "float",
     8,
     2,
     {85.70, 0.00, 0.00},
     {74.97, 0.00, 0.00},
     17179869184,
     4294967296,
     {66023, 260.21, 487.90},
     {65990, 260.34, 488.14},
     124.584},
    {"h100x16_2node_allreduce_aws-p5-keitaw-nccl2.20.3-ofituner.txt",
     Collective::all_reduce,
     16,
     true,
     32,
     "float",
     8,
     2,
     {65.43, 0.00, 0.00},
     {64.78, 0.00, 0.00},
     17179869184,
     4294967296,
     {66154, 259.69, 486.93},
     {66064, 260.05, 487.59},
     124.343},
    {"h100x16_2node_allreduce_nccl-tests-issue309-qoofyk.txt",
     Collective::all_reduce,
     16,
     true,
     32,
     "float",
     8,
     2,
     {68.52, 0.00, 0.00},
     {24.70, 0.00, 0.00},
     17179869184,
     4294967296,
     {68652, 250.24, 469.21},
     {68668, 250.19, 469.10},
     139.56},
    {"h100x32_4node_allreduce_nccl-tests-issue309-qoofyk-vm.txt",
     Collective::all_reduce,
     32,
     true,
     32,
     "float",
     8,
     2,
     {83.42, 0.00, 0.00},
     {34.75, 0.00, 0.00},
     17179869184,
     4294967296,
     {90986, 188.82, 365.84},
     {91081, 188.62, 365.46},
     107.51},
    {"h100x16_2node_allreduce_nccl-tests-issue309-gjaion.txt",
     Collective::all_reduce,
     16,
     true,
     14,
     "float",
     1048576,
     262144,
     {93.25, 11.24, 21.08},
     {82.98, 12.64, 23.69},
     8589934592,
     2147483648,
     {34508, 248.92, 466.73},
     {34514, 248.88, 466.65},
     276.999},
    {"h100x32_4node_allreduce_nccl-tests-issue309-gjaion.txt",
     Collective::all_reduce,
     32,
     true,
     14,
     "float",
     1048576,
     262144,
     {317.0, 3.31, 6.41},
     {93.26, 11.24, 21.78},
     8589934592,
     2147483648,
     {51285, 167.49, 324.52},
     {51350, 167.28, 324.11},
     191.212},
    {"h100x64_8node_allreduce_nccl-tests-issue309-gjaion.txt",
     Collective::all_reduce,
     64,
     true,
     14,
     "float",
     1048576,
     262144,
     {117.0, 8.96, 17.64},
     {115.7, 9.06, 17.84},
     8589934592,
     2147483648,
     {52733, 162.90, 320.70},
     {52754, 162.83, 320.57},
     183.055},
    {"h100x64_8node_allreduce_nccl-tests-issue309-gjaion-minctas24-qps2.txt",
     Collective::all_reduce,
     64,
     true,
     14,
     "float",
     1048576,
     262144,
     {127.0, 8.26, 16.26},
     {110.5, 9.49, 18.69},
     8589934592,
     2147483648,
     {43211, 198.79, 391.37},
     {43506, 197.44, 388.72},
     192.573},
    {"h100x1024_128node_allreduce_ring_ll128_nccl-tests-issue322.txt",
     Collective::all_reduce,
     1024,
     true,
     5,
     "float",
     1073741824,
     268435456,
     {19355, 55.48, 110.84},
     {19189, 55.96, 111.80},
     17179869184,
     4294967296,
     {93457, 183.83, 367.29},
     {93420, 183.90, 367.44},
     -1},
    {"h100x16_2node_allreduce_gcp-a3mega-tcpxo.txt",
     Collective::all_reduce,
     16,
     true,
     31,
     "float",
     8,
     2,
     {135.8, 0.00, 0.00},
     {123.5, 0.00, 0.00},
     8589934592,
     2147483648,
     {47535, 180.71, 338.82},
     {47743, 179.92, 337.35},
     70.742},
    {"h100x16_2node_allreduce_oci-bm-gpu-h100-8.txt",
     Collective::all_reduce,
     16,
     true,
     5,
     "float",
     1073741824,
     268435456,
     {4511.2, 238.02, 446.28},
     {4520.9, 237.50, 445.32},
     17179869184,
     4294967296,
     {69338, 247.77, 464.57},
     {69305, 247.89, 464.79},
     458.452},
    {"h200x16_2node_allreduce_nebius-ml-cookbook.txt",
     Collective::all_reduce,
     16,
     true,
     5,
     "float",
     1073741824,
     268435456,
     {4508.0, 238.19, 446.60},
     {4489.7, 239.16, 448.42},
     17179869184,
     4294967296,
     {67369, 255.01, 478.15},
     {67212, 255.61, 479.26},
     467.089},
    {"mi300xx8_allreduce_rccl_hisohara-aac8.txt",
     Collective::all_reduce,
     8,
     true,
     31,
     "float",
     8,
     2,
     {19.28, 0.00, 0.00},
     {17.24, 0.00, 0.00},
     8589934592,
     2147483648,
     {47617, 180.40, 315.69},
     {47584, 180.52, 315.91},
     110.464},
    {"mi300xx16_2node_allreduce_rccl_hisohara-aac10.txt",
     Collective::all_reduce,
     16,
     true,
     32,
     "float",
     8,
     2,
     {256.5, 0.00, 0.00},
     {254.7, 0.00, 0.00},
     17179869184,
     4294967296,
     {90115, 190.64, 357.46},
     {90127, 190.62, 357.41},
     92.3318},
    {"h100x2_2node-1pernode_alltoall_xxrjun-cluster00.txt",
     Collective::all_to_all,
     2,
     true,
     10,
     "double",
     33554432,
     2097152,
     {1282.93, 26.15, 13.08},
     {1266.72, 26.49, 13.24},
     17179869184,
     1073741824,
     {635876, 27.02, 13.51},
     {631396, 27.21, 13.60},
     13.4689},
    {"h100x16_2node_alltoall_xxrjun-cluster00.txt",
     Collective::all_to_all,
     16,
     true,
     10,
     "double",
     33554432,
     262144,
     {1382.27, 24.27, 22.76},
     {1354.09, 24.78, 23.23},
     17179869184,
     134217728,
     {682007, 25.19, 23.62},
     {681661, 25.20, 23.63},
     23.4963},
    {"h100x16_2node_alltoall_xxrjun-cluster01.txt",
     Collective::all_to_all,
     16,
     true,
     3,
     "double",
     4294967296,
     33554432,
     {43852.6, 97.94, 91.82},
     {43886.9, 97.86, 91.75},
     17179869184,
     134217728,
     {174994, 98.17, 92.04},
     {175000, 98.17, 92.03},
     91.9179},
    {"b200x16_2node_allgather_dranet-gke-a4.txt",
     Collective::all_gather,
     16,
     true,
     24,
     "float",
     1024,
     16,
     {280.4, 0.00, 0.00},
     {233.9, 0.00, 0.00},
     8589934592,
     134217728,
     {30970, 277.36, 260.03},
     {31063, 276.53, 259.25},
     59.3638},
    {"gb200x72_nvl72_allreduce_coreweave-pr43.txt",
     Collective::all_reduce,
     72,
     true,
     5,
     "float",
     536870912,
     134217728,
     {1806.7, 297.16, 586.06},
     {1835.9, 292.43, 576.74},
     8589934592,
     2147483648,
     {20299, 423.16, 834.57},
     {20006, 429.37, 846.82},
     745.53},
    {"gb200x1440_20rack_allreduce_coreweave-pr48.txt",
     Collective::all_reduce,
     1440,
     true,
     3,
     "float",
     536870912,
     134217728,
     {7108.4, 75.53, 150.95},
     {7145.8, 75.13, 150.16},
     2147483648,
     536870912,
     {14980, 143.36, 286.52},
     {15087, 142.34, 284.49},
     -1},
    {"b200x2_2node-1pernode_allgather_dranet-gke-a4.txt",
     Collective::all_gather,
     2,
     true,
     28,
     "float",
     0,
     0,
     {0.06, 0.00, 0.00},
     {0.06, 0.00, 0.00},
     1073741824,
     134217728,
     {14640, 73.35, 36.67},
     {11892, 90.29, 45.14},
     12.5463},
    {"h200x2_2node-1pernode_allgather_dranet-gke-a3ultra.txt",
     Collective::all_gather,
     2,
     true,
     24,
     "float",
     1024,
     128,
     {21.75, 0.05, 0.02},
     {20.94, 0.05, 0.02},
     8589934592,
     1073741824,
     {133370, 64.41, 32.20},
     {128890, 66.65, 33.32},
     15.0709},
};

fs::path data_dir() { return fs::path(COLLKIT_SOURCE_DIR) / "tests" / "data" / "nccl-tests"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Half of the last printed digit of a number as printed ("183.49" -> 0.005).
double half_ulp(const std::string& s) {
  const std::size_t dot = s.find('.');
  return 0.5 *
         std::pow(10.0, -(dot == std::string::npos ? 0 : static_cast<int>(s.size() - dot - 1)));
}

void expect_row(const ResultRow& r, std::int64_t bytes, std::int64_t count, bool in_place,
                const Figures& f) {
  EXPECT_EQ(r.bytes, bytes);
  EXPECT_EQ(r.count, count);
  EXPECT_EQ(r.in_place, in_place);
  EXPECT_EQ(r.algorithm, "nccl");
  EXPECT_DOUBLE_EQ(r.time_us, f.time);
  EXPECT_DOUBLE_EQ(r.algbw_gbps, f.algbw);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, f.busbw);
}

// The twenty-five runs the model was set against, the twenty gathered for
// issue 38 and the two GB200 NVL72 runs of issue 42 to measure it only
// (SOURCES.md); the INFO-line sidecars end in .info.
TEST(NcclTestsData, AllFortySevenFilesAreHere) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(data_dir())) n += e.path().extension() == ".txt";
  EXPECT_EQ(n, 47);
  EXPECT_EQ(std::size(kFiles), 47u);
}

TEST(NcclTestsData, EveryFileParsesWithItsRowsAndFigures) {
  for (const DataFile& d : kFiles) {
    SCOPED_TRACE(d.name);
    const fs::path path = data_dir() / d.name;
    ReadOptions o;
    o.collective = d.collective;  // the copies do not name the binary
    if (d.ranks_needed) o.ranks = d.ranks;
    const std::vector<InputRun> runs = read_runs(path.string(), o);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].format, InputFormat::nccl_tests_text);
    const Report& r = runs[0].report;
    EXPECT_EQ(r.ranks, d.ranks);
    EXPECT_EQ(r.mode, ReportMode::measure);
    EXPECT_EQ(to_string(r.dtype), d.dtype);
    ASSERT_EQ(r.results.size(), 2u * d.table_rows);
    for (const ResultRow& row : r.results) EXPECT_EQ(row.collective, d.collective);
    expect_row(r.results[0], d.first_bytes, d.first_count, false, d.first_oop);
    expect_row(r.results[1], d.first_bytes, d.first_count, true, d.first_ip);
    expect_row(r.results[r.results.size() - 2], d.last_bytes, d.last_count, false, d.last_oop);
    expect_row(r.results.back(), d.last_bytes, d.last_count, true, d.last_ip);
    if (d.avg_busbw < 0)  // the run stopped before nccl-tests printed it
      EXPECT_FALSE(r.extra.contains("avg_busbw"));
    else
      EXPECT_DOUBLE_EQ(r.extra["avg_busbw"].get<double>(), d.avg_busbw);
    // The alltoall run did not check in place: #wrong N/A.
    EXPECT_EQ(r.results[1].wrong, d.collective == Collective::all_to_all ? -1 : 0);
    EXPECT_EQ(r.results[0].wrong, 0);
  }
}

// rccl-tests prints the same table as nccl-tests, with its own version line
// ("# rccl-tests: Version develop:448c4c7") and RCCL's ("# RCCL version :
// 2.22.3-HEAD:7d8d67c"): the reports say the library is RCCL, its version,
// and name no NCCL version (RCCL's numbers follow NCCL's, its cost model
// does not). The one-node run's log was cut before its RCCL line.
TEST(NcclTestsData, RcclTestsLogsNameRcclAndItsVersion) {
  const auto extra = [](const char* name, int ranks) {
    ReadOptions o;
    o.collective = Collective::all_reduce;
    o.ranks = ranks;
    return read_runs((data_dir() / name).string(), o).at(0).report.extra;
  };
  const Json two = extra("mi300xx16_2node_allreduce_rccl_hisohara-aac10.txt", 16);
  EXPECT_EQ(two.value("library", ""), "RCCL");
  EXPECT_EQ(two.value("rccl_version", ""), "2.22.3");
  EXPECT_EQ(two.value("rccl_version_line", ""), "2.22.3-HEAD:7d8d67c");
  EXPECT_EQ(two.value("rccl_tests_version", ""), "develop:448c4c7");
  EXPECT_FALSE(two.contains("nccl_version"));
  const Json one = extra("mi300xx8_allreduce_rccl_hisohara-aac8.txt", 8);
  EXPECT_EQ(one.value("library", ""), "RCCL");
  EXPECT_EQ(one.value("rccl_tests_version", ""), "develop:a7809b3");
  EXPECT_FALSE(one.contains("rccl_version"));
  // The same lines as a raw log prints them, without '#'.
  const std::string raw =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg "
      "iters: 1 validation: 1 graph: 0\n#\nrccl-tests: Version develop:5272cd1\nRCCL version : "
      "2.26.6-HEAD:6ade506\nHIP version  : 7.0.51831-a3e329ad8\n#\n"
      "#                                                              out-of-place                "
      "       in-place\n#       size         count      type   redop    root     time   algbw   "
      "busbw #wrong     time   algbw   busbw #wrong\n#        (B)    (elements)                   "
      "            (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n           8             2"
      "     float     sum      -1    41.16    0.00    0.00      0    39.80    0.00    0.00      "
      "0\n";
  const fs::path tmp =
      fs::temp_directory_path() / ("collkit_rccl_raw_log_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(tmp);
    out << raw;
  }
  ReadOptions o;
  o.collective = Collective::all_reduce;
  o.ranks = 16;
  const Json x = read_runs(tmp.string(), o).at(0).report.extra;
  fs::remove(tmp);
  EXPECT_EQ(x.value("library", ""), "RCCL");
  EXPECT_EQ(x.value("rccl_version", ""), "2.26.6");
  EXPECT_EQ(x.value("rccl_tests_version", ""), "develop:5272cd1");
}

// busbw from the time with nccl-tests' factors, against the printed busbw,
// reading the file's columns here (not through the reader).
TEST(NcclTestsData, BusbwRecomputedFromTimeMatchesThePrintedBusbw) {
  int rows = 0;
  for (const DataFile& d : kFiles) {
    SCOPED_TRACE(d.name);
    std::istringstream in(slurp(data_dir() / d.name));
    std::string line;
    int table_rows = 0;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream cols(line);
      std::vector<std::string> c;
      for (std::string w; cols >> w;) c.push_back(w);
      ASSERT_EQ(c.size(), 13u) << line;
      ++table_rows;
      const double bytes = std::stod(c[0]);
      for (int g : {5, 9}) {
        const double t = std::stod(c[g]);
        const double busbw = std::stod(c[g + 2]);
        const double factor = busbw_factor(d.collective, d.ranks);
        const double recomputed = bytes / (t * 1e3) * factor;
        // The time is printed to a few digits: the recomputed busbw is good
        // to recomputed x dt / t, the printed one to half its last digit.
        const double tolerance =
            half_ulp(c[g + 2]) + recomputed * half_ulp(c[g]) / (t - half_ulp(c[g])) + 1e-9;
        EXPECT_NEAR(recomputed, busbw, tolerance) << line;
        ++rows;
      }
    }
    EXPECT_EQ(table_rows, d.table_rows);
  }
  // Thirteen tables, then the twelve 10-node tables with 1, 2 and 4 GPUs a
  // node, then the twenty of issue 38, then the two GB200 runs of issue 42.
  EXPECT_EQ(rows,
            2 * (14 + 10 + 10 + 10 + 10 + 31 + 10 + 31 + 31 + 10 + 10 + 31 + 10 + 12 * 10 + 4 * 32 +
                 4 * 14 + 5 + 31 + 5 + 5 + 31 + 32 + 10 + 10 + 3 + 24 + 28 + 24 + 5 + 3));
}

// One process per GPU and no "# Rank" lines in the copies: nThread x nGpus
// (1) is not the rank count, which the busbw (or size and count) columns
// show, and the error says which count fits.
TEST(NcclTestsData, AWrongRankCountIsCaughtWithTheCountThatFits) {
  for (const DataFile& d : kFiles) {
    if (!d.ranks_needed) continue;
    SCOPED_TRACE(d.name);
    ReadOptions o;
    o.collective = d.collective;
    // The GB200 copies have no parameter line (their source shows the table
    // alone): without nThread x nGpus there is no count to test, and the
    // reader says so.
    const bool parameter_line = slurp(data_dir() / d.name).find("# nThread") != std::string::npos;
    try {
      read_runs((data_dir() / d.name).string(), o);
      ADD_FAILURE() << "no error";
    } catch (const FileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(d.name) + ":"), std::string::npos) << what;
      if (!parameter_line) {
        EXPECT_NE(what.find("ranks: unknown: the log has no '# Rank' lines and no '# nThread"),
                  std::string::npos)
            << what;
        continue;
      }
      // A per-rank count names the count exactly from one row; busbw is
      // rounded, so the reader keeps the counts every row fits.
      const std::string give =
          "p = " + std::to_string(d.ranks) + ": give --ranks " + std::to_string(d.ranks);
      const std::size_t range = what.find("the rows fit p = ");
      if (what.find("..", range) != std::string::npos) {
        // Too many ranks for the rounded figures to pin one count (1,024):
        // the range the rows allow holds the run's.
        int lo = 0, hi = 0;
        ASSERT_EQ(std::sscanf(what.c_str() + range, "the rows fit p = %d..%d", &lo, &hi), 2)
            << what;
        EXPECT_LE(lo, d.ranks) << what;
        EXPECT_GE(hi, d.ranks) << what;
        EXPECT_GE(d.ranks, 1000) << what;
        continue;
      }
      EXPECT_TRUE(what.find("the row fits " + give) != std::string::npos ||
                  what.find("the rows fit " + give) != std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace collkit
