// Decode attention on a CPU over the kept K/V copies of engine.kernels.decode_mirror: one
// new query token per sequence, each sequence attending exactly its own keys (no padding
// to the longest row, no mask). Compiled and loaded by engine/kernels/cpu_decode.py.
//
// The copies hold the batch's sequences in slots; the step's rows come in another order
// (slot_rows[s] is the step row of slot s). Layout (float32):
//   q        row r at q + r * q_row: [H, G, D] (the G query heads of KV head h together)
//   new_k/v  row r at new_k + r * k_row (new_v + r * v_row): [H, D], the row's new token
//   kt       [R, H, D, cap] the keys transposed, so a run of keys is contiguous per channel
//   v        [R, H, cap, D]
//   out      row r at out + r * out_row: [H, G, D]
//   lens     [B] keys of each slot (>= 1, <= cap)
//   scratch  threads * G * (cap + W) floats (one part per thread)
// Slots below `carried` first get their row's new K/V written at key lens[s] - 1 (the
// copies keep the rest from earlier steps). D % 16 == 0, D <= 256, G <= 8. Slots are
// independent: slot s reads and writes only its own keys.
//
// Per (slot, KV head): the scores of the G queries, W keys at a time (each key vector read
// once for the group); the slot's max; exponentials and their sum; then P @ V reading each
// value row once for the group, divided by the sum at the end. The GCC vector extensions
// keep it to plain C++ (the compiler picks AVX-512, AVX2 or SSE for -march=native).
// Built with OpenMP, the (slot, KV head) pairs are shared by `threads` threads of the
// OpenMP runtime the process already runs (torch's), when the work is large enough.

#include <cstdint>
#include <cstring>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

typedef float vf __attribute__((vector_size(64)));
typedef float vfu __attribute__((vector_size(64), aligned(4)));
typedef int32_t vi __attribute__((vector_size(64)));
constexpr int W = 16;
constexpr int MAXG = 8;
constexpr int MAXDV = 16;

inline vf load(const float *p) { return *reinterpret_cast<const vfu *>(p); }
inline void store(float *p, vf x) { *reinterpret_cast<vfu *>(p) = x; }
inline vf splat(float x) {
    vf z = {};
    return z + x;
}

// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor polynomial to
// degree 7 (relative error under 2e-7 there), 2^n from the exponent bits; below -87 the
// result is e^-87 (about 1.6e-38), against sums of at least 1 (the max scores e^0).
inline vf exp_nonpositive(vf x) {
    x = x < splat(-87.0f) ? splat(-87.0f) : x;
    vf n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
    vf r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    vf p = splat(1.0f / 5040.0f);
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi bits = (__builtin_convertvector(n, vi) + 127) << 23;
    vf two_n;
    std::memcpy(&two_n, &bits, sizeof two_n);
    return p * two_n;
}

inline float hmax(vf x) {
    float m = x[0];
    for (int t = 1; t < W; t++) m = x[t] > m ? x[t] : m;
    return m;
}

inline float hsum(vf x) {
    float s = 0.0f;
    for (int t = 0; t < W; t++) s += x[t];
    return s;
}

void one_head(const float *__restrict__ Q, const float *__restrict__ KT,
              const float *__restrict__ V, float *__restrict__ O, int64_t L, int64_t G,
              int64_t D, int64_t cap, float scale, float *__restrict__ scratch) {
    const int64_t stride = cap + W;
    const int64_t full = L / W * W;
    const int64_t dv = D / W;
    vf vmax[MAXG];
    for (int64_t g = 0; g < G; g++) vmax[g] = splat(-3.0e38f);
    for (int64_t j = 0; j < full; j += W) {
        vf acc[MAXG];
        for (int64_t g = 0; g < G; g++) acc[g] = splat(0.0f);
        for (int64_t d = 0; d < D; d++) {
            vf k = load(KT + d * cap + j);
            for (int64_t g = 0; g < G; g++) acc[g] += Q[g * D + d] * k;
        }
        for (int64_t g = 0; g < G; g++) {
            vf s = acc[g] * scale;
            store(scratch + g * stride + j, s);
            vmax[g] = s > vmax[g] ? s : vmax[g];
        }
    }
    float m[MAXG];
    for (int64_t g = 0; g < G; g++) m[g] = hmax(vmax[g]);
    if (full < L && full + W <= cap) {
        // The last, partial block as one more vector block: its lanes past L read keys
        // the copy holds but the row does not see (any value, even NaN), which the max
        // leaves out here and the exponentials below never read.
        vf acc[MAXG];
        for (int64_t g = 0; g < G; g++) acc[g] = splat(0.0f);
        for (int64_t d = 0; d < D; d++) {
            vf k = load(KT + d * cap + full);
            for (int64_t g = 0; g < G; g++) acc[g] += Q[g * D + d] * k;
        }
        vi lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        vi seen = lane < static_cast<int32_t>(L - full);
        for (int64_t g = 0; g < G; g++) {
            vf s = acc[g] * scale;
            store(scratch + g * stride + full, s);
            vf shown = seen ? s : splat(-3.0e38f);
            float t = hmax(shown);
            m[g] = t > m[g] ? t : m[g];
        }
    } else {
        for (int64_t j = full; j < L; j++) {
            for (int64_t g = 0; g < G; g++) {
                float s = 0.0f;
                for (int64_t d = 0; d < D; d++) s += Q[g * D + d] * KT[d * cap + j];
                s *= scale;
                scratch[g * stride + j] = s;
                m[g] = s > m[g] ? s : m[g];
            }
        }
    }
    float inv[MAXG];
    for (int64_t g = 0; g < G; g++) {
        float *s = scratch + g * stride;
        const vf mv = splat(m[g]);
        vf sums = splat(0.0f);
        for (int64_t j = 0; j < full; j += W) {
            vf e = exp_nonpositive(load(s + j) - mv);
            store(s + j, e);
            sums += e;
        }
        float sum = hsum(sums);
        if (full < L) {
            vf tail = splat(-100.0f);
            for (int64_t j = full; j < L; j++) tail[j - full] = s[j] - m[g];
            vf e = exp_nonpositive(tail);
            for (int64_t j = full; j < L; j++) {
                s[j] = e[j - full];
                sum += e[j - full];
            }
        }
        inv[g] = 1.0f / sum;
    }
    vf o[MAXG][MAXDV];
    for (int64_t g = 0; g < G; g++)
        for (int64_t c = 0; c < dv; c++) o[g][c] = splat(0.0f);
    for (int64_t j = 0; j < L; j++) {
        const float *vj = V + j * D;
        for (int64_t c = 0; c < dv; c++) {
            vf x = load(vj + c * W);
            for (int64_t g = 0; g < G; g++) o[g][c] += scratch[g * stride + j] * x;
        }
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t c = 0; c < dv; c++) store(O + g * D + c * W, o[g][c] * inv[g]);
}

}  // namespace

extern "C" int engine_decode_parallel() {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

extern "C" void engine_decode_attention(const float *q, int64_t q_row, const int64_t *slot_rows,
                                        const float *new_k, int64_t k_row, const float *new_v,
                                        int64_t v_row, int64_t carried, float *kt, float *v,
                                        float *out, int64_t out_row, const int64_t *lens,
                                        int64_t B, int64_t H, int64_t G, int64_t D,
                                        int64_t cap, float scale, float *scratch,
                                        int64_t threads) {
    int64_t keys = 0;
    for (int64_t b = 0; b < B; b++) keys += lens[b];
    const int64_t part = G * (cap + W);
    // Below about this many (key, KV head) pairs a parallel region costs more than it saves.
    const bool parallel = threads > 1 && keys * H >= 4096;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (parallel)
#endif
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        int64_t thread = 0;
#ifdef _OPENMP
        thread = omp_get_thread_num();
#endif
        const int64_t row = slot_rows[b];
        const int64_t at = lens[b] - 1;
        float *KT = kt + (b * H + h) * D * cap;
        float *V = v + (b * H + h) * cap * D;
        if (b < carried) {
            const float *k_new = new_k + row * k_row + h * D;
            const float *v_new = new_v + row * v_row + h * D;
            for (int64_t d = 0; d < D; d++) {
                KT[d * cap + at] = k_new[d];
                V[at * D + d] = v_new[d];
            }
        }
        one_head(q + row * q_row + h * G * D, KT, V, out + row * out_row + h * G * D, lens[b],
                 G, D, cap, scale, scratch + thread * part);
    }
    (void)parallel;
}

// Rows of the copies read from the paged pool: slot first + i gets the first lens[i] keys
// of the sequence whose block table is tables[i * width ...]. The pool layer is
// [blocks, bs, H, D] for K and for V (the two halves of the layer's tensor); kt and v are
// the copies as above. Keys past lens[i] are left as they are (the kernel never reads
// them).
extern "C" void engine_mirror_read(const float *pool_k, const float *pool_v,
                                   const int64_t *tables, int64_t width, const int64_t *lens,
                                   int64_t n, int64_t first, int64_t bs, int64_t H, int64_t D,
                                   int64_t cap, float *kt, float *v) {
    for (int64_t i = 0; i < n; i++) {
        const int64_t s = first + i;
        const int64_t L = lens[i];
        for (int64_t p = 0; p < L; p++) {
            const int64_t block = tables[i * width + p / bs];
            const int64_t src = ((block * bs + p % bs) * H) * D;
            for (int64_t h = 0; h < H; h++) {
                const float *k_row = pool_k + src + h * D;
                const float *v_row = pool_v + src + h * D;
                float *KT = kt + (s * H + h) * D * cap + p;
                float *V = v + ((s * H + h) * cap + p) * D;
                for (int64_t d = 0; d < D; d++) {
                    KT[d * cap] = k_row[d];
                    V[d] = v_row[d];
                }
            }
        }
    }
}

// Rows moved within the copies: slot dst[i] gets slot src[i]'s first lens[i] keys.
extern "C" void engine_mirror_move(const int64_t *dst, const int64_t *src, const int64_t *lens,
                                   int64_t n, int64_t H, int64_t D, int64_t cap, float *kt,
                                   float *v) {
    for (int64_t i = 0; i < n; i++) {
        const int64_t L = lens[i];
        for (int64_t h = 0; h < H; h++) {
            const float *from_k = kt + (src[i] * H + h) * D * cap;
            float *to_k = kt + (dst[i] * H + h) * D * cap;
            for (int64_t d = 0; d < D; d++)
                std::memcpy(to_k + d * cap, from_k + d * cap, L * sizeof(float));
            std::memcpy(v + (dst[i] * H + h) * cap * D, v + (src[i] * H + h) * cap * D,
                        L * D * sizeof(float));
        }
    }
}
