// Shared by the MSCCL tests: the published files in tests/data/msccl/ and a
// builder for small hand-written files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace collkit::msccl_testing {

inline std::string data_dir() { return std::string(COLLKIT_SOURCE_DIR) + "/tests/data/msccl"; }

struct Published {
  std::string file;  // in data_dir()
  std::string collective;
  int ranks;
  int nchunks;
  std::string failure;  // "" = computes its collective; else part of the expected error
  // The first float count at which the runtime hangs with NCCL's default
  // buffers, all ranks in one node (-1: at no size), computed by hand.
  std::int64_t hangs_from = -1;
};

inline const std::vector<Published>& published() {
  static const std::vector<Published> files = {
      {"Azure__msccl-executor-nccl__src__tools__msccl-algorithms__r48ll128.xml", "all_reduce", 8,
       64, ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ncv4__ag_hier_4_LL.xml", "all_gather", 4,
       16, ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ncv4__ar_hier_12_Simple.xml", "all_reduce",
       4, 24, ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ncv4__ar_tree_12_LL.xml", "all_reduce", 4,
       24, ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__a2a2ll.xml", "all_to_all", 8, 16,
       ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__ag-1m.xml", "all_gather", 8, 32, ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__ap2ll.xml", "all_reduce", 8, 128,
       ""},
      {"Azure__msccl-scheduler__tools__msccl-algorithms__ndv4__r48ll.xml", "all_reduce", 8, 64, ""},
      {"ROCm__rccl__tools__msccl-algorithms__allgather-8n-1kb-4kb.xml", "all_gather", 8, 16, ""},
      {"ROCm__rccl__tools__msccl-algorithms__allreduce-allpairs-8n-ll-1pass-op.xml", "all_reduce",
       8, 16, ""},
      {"microsoft__msccl-tools__experiments_ar_multi__ar_1.xml", "all_reduce", 8, 8,
       "thread blocks 5 and 8 both receive from gpu 6 on channel 0"},
      {"microsoft__msccl__src__xml_generator__ar_ll.xml", "all_reduce", 8, 8, ""},
      // Every GPU first sends 32 chunks to its partner, then receives 32 from
      // it (Simple). A call carries m = floor(2097152 / ceil(bytes / 64))
      // chunks (chunkEffectiveSize: 4 MiB / 8 steps x 4), the 32 chunks take
      // ceil(32 / m) calls of 4 steps against the connection's 8: they fit
      // while m >= 16, that is while ceil(bytes / 64) <= 131072, bytes <= 8
      // MiB = 2097152 floats. The first multiple of 64 above: 2097216.
      {"dailiuyao__msccl_tools_lyd__examples__xml__allreduce_rec_doub_halv_Simple_gpu64_ins1.xml",
       "all_reduce", 64, 64, "", 2097216},
      {"spriestgcl__teccl-msccl__teccl__examples__experiments__output__nvswitch16__AllGather__Fast_"
       "_64MB_msccl_strict.xml",
       "all_gather", 16, 16, "deadlock"},
  };
  return files;
}

inline std::string path_of(const Published& p) { return data_dir() + "/" + p.file; }

// A one-gpu-per-line builder: Xml{"allreduce", 2, 2}.gpu(0, 2, 2, 0).tb(0, 1, 1, 0)
//   .step("s", "i", 0, "o", 0)... .str()
class Xml {
 public:
  Xml(std::string coll, int ngpus, int nchunks, std::string proto = "Simple",
      std::string placement = "inplace=\"0\" outofplace=\"1\"")
      : text_("<algo name=\"t\" proto=\"" + proto + "\" nchannels=\"2\" nchunksperloop=\"" +
              std::to_string(nchunks) + "\" ngpus=\"" + std::to_string(ngpus) + "\" coll=\"" +
              coll + "\" " + placement + " minBytes=\"0\" maxBytes=\"0\">\n") {}
  Xml& gpu(int id, int i, int o, int s) {
    close_gpu();
    text_ += "<gpu id=\"" + std::to_string(id) + "\" i_chunks=\"" + std::to_string(i) +
             "\" o_chunks=\"" + std::to_string(o) + "\" s_chunks=\"" + std::to_string(s) + "\">\n";
    in_gpu_ = true;
    return *this;
  }
  Xml& tb(int id, int send, int recv, int chan = 0) {
    close_tb();
    text_ += "<tb id=\"" + std::to_string(id) + "\" send=\"" + std::to_string(send) + "\" recv=\"" +
             std::to_string(recv) + "\" chan=\"" + std::to_string(chan) + "\">\n";
    in_tb_ = true;
    step_ = 0;
    return *this;
  }
  Xml& step(const std::string& type, const std::string& sb, int so, const std::string& db, int dof,
            int cnt = 1, int depid = -1, int deps = -1, int hasdep = 0) {
    text_ += "<step s=\"" + std::to_string(step_++) + "\" type=\"" + type + "\" srcbuf=\"" + sb +
             "\" srcoff=\"" + std::to_string(so) + "\" dstbuf=\"" + db + "\" dstoff=\"" +
             std::to_string(dof) + "\" cnt=\"" + std::to_string(cnt) + "\" depid=\"" +
             std::to_string(depid) + "\" deps=\"" + std::to_string(deps) + "\" hasdep=\"" +
             std::to_string(hasdep) + "\"/>\n";
    return *this;
  }
  std::string str() {
    close_gpu();
    return text_ + "</algo>\n";
  }

 private:
  void close_tb() {
    if (in_tb_) text_ += "</tb>\n";
    in_tb_ = false;
  }
  void close_gpu() {
    close_tb();
    if (in_gpu_) text_ += "</gpu>\n";
    in_gpu_ = false;
  }
  std::string text_;
  bool in_gpu_ = false, in_tb_ = false;
  int step_ = 0;
};

}  // namespace collkit::msccl_testing
