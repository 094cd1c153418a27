// preprocess: Darknet's image pre-processing on the device (cuda_ops.h), the
// same values as the CPU reference (kernels/cpu/preprocess.cpp, Darknet src/image.c):
//   u(x, y, k) = byte / 255.f                       (load_image_cv, RGB order)
//   resize_image (align-corners, two passes), for output pixel (x, y) of a rw x rh resize:
//     h(row) = x == rw-1 || iw == 1 ? u(iw-1, row)
//            : (1-dx)*u(ix, row) + dx*u(min(ix+1, iw-1), row),  sx = x*w_scale, ix = (int)sx, dx = sx-ix
//     out    = y == rh-1 || ih == 1 ? (1-dy)*h(iy)
//            : (1-dy)*h(iy) + dy*h(min(iy+1, ih-1)),             sy = y*h_scale, iy = (int)sy, dy = sy-iy
//     scales = r > 1 ? (float)(i-1) / (float)(r-1) : 0 (host), same size = identity (copy_image);
//   letterbox: resize to letterbox_size() and paste at ((ow-new_w)/2, (oh-new_h)/2) on a 0.5 canvas.
// Each output pixel is computed directly (no intermediate pass buffer) with the
// same IEEE operations in the same order as the CPU's two passes; __fmul_rn /
// __fadd_rn / __fsub_rn / __fdiv_rn are never contracted into FMA, so f32 output
// is bit-identical to the CPU reference. One thread per output pixel (3 channels).
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

struct Geometry {
  int iw = 0, ih = 0;        // source image
  int rw = 0, rh = 0;        // resized image
  int ox = 0, oy = 0;        // where the resized image is pasted in the canvas (letterbox)
  float w_scale = 0.f, h_scale = 0.f;
  bool identity = false;     // rw == iw && rh == ih: Darknet copies the image
};

struct Source {
  const uint8_t* data;
  int64_t row_stride;  // bytes
  int channels;
  int off[3];          // byte offsets of R, G, B inside a pixel
};

__device__ __forceinline__ float unit(const Source& s, int x, int y, int k) {
  const uint8_t b = s.data[int64_t(y) * s.row_stride + int64_t(x) * s.channels + s.off[k]];
  return __fdiv_rn(float(b), 255.f);
}

__global__ void preprocess_kernel(Source src, Geometry g, TensorView out, int n_index, uint32_t pixels) {
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < pixels; r += gridDim.x * blockDim.x) {
    const int cy = int(r / uint32_t(out.w));
    const int cx = int(r - uint32_t(cy) * uint32_t(out.w));
    const int x = cx - g.ox;
    const int y = cy - g.oy;
    float v[3];
    if (x < 0 || x >= g.rw || y < 0 || y >= g.rh) {
      v[0] = v[1] = v[2] = 0.5f;  // letterbox canvas
    } else if (g.identity) {
      for (int k = 0; k < 3; ++k) v[k] = unit(src, x, y, k);
    } else {
      // horizontal taps
      const bool last_col = x == g.rw - 1 || g.iw == 1;
      int ix0 = g.iw - 1, ix1 = g.iw - 1;
      float dx = 0.f;
      if (!last_col) {
        const float sx = __fmul_rn(float(x), g.w_scale);
        ix0 = int(sx);
        dx = __fsub_rn(sx, float(ix0));
        ix1 = min(ix0 + 1, g.iw - 1);
      }
      // vertical taps
      const float sy = __fmul_rn(float(y), g.h_scale);
      const int iy0 = int(sy);
      const float dy = __fsub_rn(sy, float(iy0));
      const int iy1 = min(iy0 + 1, g.ih - 1);
      const bool last_row = y == g.rh - 1 || g.ih == 1;
      const float one_dx = __fsub_rn(1.f, dx);
      const float one_dy = __fsub_rn(1.f, dy);
      for (int k = 0; k < 3; ++k) {
        const float a = last_col ? unit(src, ix0, iy0, k)
                                 : __fadd_rn(__fmul_rn(one_dx, unit(src, ix0, iy0, k)),
                                             __fmul_rn(dx, unit(src, ix1, iy0, k)));
        if (last_row) {
          v[k] = __fmul_rn(one_dy, a);
        } else {
          const float b = last_col ? unit(src, ix0, iy1, k)
                                   : __fadd_rn(__fmul_rn(one_dx, unit(src, ix0, iy1, k)),
                                               __fmul_rn(dx, unit(src, ix1, iy1, k)));
          v[k] = __fadd_rn(__fmul_rn(one_dy, a), __fmul_rn(dy, b));
        }
      }
    }
    for (int k = 0; k < 3; ++k) store_at(out, n_index, k, cy, cx, v[k]);
  }
}

// Darknet's (float)(in - 1) / (out - 1), 0 for a single output row/column (see cpu preprocess.cpp).
float align_corners_scale(int in, int out) {
  return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
}

// cpu::letterbox_size (Darknet src/image.c letterbox_image): float compare, integer sizes.
void letterbox_size(int iw, int ih, int ow, int oh, int* new_w, int* new_h) {
  if (static_cast<float>(ow) / iw < static_cast<float>(oh) / ih) {
    *new_w = ow;
    *new_h = static_cast<int>((int64_t(ih) * ow) / iw);
  } else {
    *new_h = oh;
    *new_w = static_cast<int>((int64_t(iw) * oh) / ih);
  }
}

}  // namespace

Status preprocess(const DeviceImage& img, bool letterbox, const TensorView& out, int n_index, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(out, "preprocess", "out"));
  if (img.data == nullptr || img.width <= 0 || img.height <= 0)
    return invalid_argument("preprocess: empty image (" + std::to_string(img.width) + "x" +
                            std::to_string(img.height) + ")");
  if (img.channels != 1 && img.channels != 3 && img.channels != 4)
    return invalid_argument("preprocess: " + std::to_string(img.channels) + " channels per pixel (1, 3 or 4)");
  const int64_t packed_row = int64_t(img.width) * img.channels;
  const int64_t row_stride = img.row_stride > 0 ? img.row_stride : packed_row;
  if (row_stride < packed_row)
    return invalid_argument("preprocess: row_stride " + std::to_string(img.row_stride) + " < width*channels " +
                            std::to_string(packed_row));
  if (out.c != 3 || out.h <= 0 || out.w <= 0)
    return invalid_argument("preprocess: out " + view_dims(out) + " is not a 3-channel image batch");
  if (n_index < 0 || n_index >= out.n)
    return invalid_argument("preprocess: n_index " + std::to_string(n_index) + " outside out batch " +
                            std::to_string(out.n));

  Geometry g;
  g.iw = img.width;
  g.ih = img.height;
  g.rw = out.w;
  g.rh = out.h;
  if (letterbox) {
    letterbox_size(img.width, img.height, out.w, out.h, &g.rw, &g.rh);
    if (g.rw <= 0 || g.rh <= 0 || g.rw > out.w || g.rh > out.h)
      return invalid_argument("preprocess: letterbox of " + std::to_string(img.width) + "x" +
                              std::to_string(img.height) + " into " + std::to_string(out.w) + "x" +
                              std::to_string(out.h) + " gives an empty image");
    g.ox = (out.w - g.rw) / 2;
    g.oy = (out.h - g.rh) / 2;
  }
  g.identity = g.rw == g.iw && g.rh == g.ih;
  g.w_scale = align_corners_scale(g.iw, g.rw);
  g.h_scale = align_corners_scale(g.ih, g.rh);

  Source src;
  src.data = img.data;
  src.row_stride = row_stride;
  src.channels = img.channels;
  const bool color = img.channels >= 3;
  src.off[0] = color ? (img.bgr ? 2 : 0) : 0;
  src.off[1] = color ? 1 : 0;
  src.off[2] = color ? (img.bgr ? 0 : 2) : 0;

  const int64_t pixels = int64_t(out.h) * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(pixels, 1, "preprocess", &grid, &empty));
  if (empty) return Status();
  preprocess_kernel<<<grid, kBlockThreads, 0, stream>>>(src, g, out, n_index, uint32_t(pixels));
  DLR_CUDA_LAUNCH_CHECK("preprocess_kernel");
  return Status();
}

}  // namespace dlr::cuda
