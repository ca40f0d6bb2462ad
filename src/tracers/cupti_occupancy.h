/* CUDA occupancy estimate as torch-cuda's kineto computes it (for the kernel args). */
#ifndef FLAGTRACE_CUPTI_OCCUPANCY_H
#define FLAGTRACE_CUPTI_OCCUPANCY_H

#include <limits.h>
#include <stddef.h>

/* kineto feeds the toolkit's cuda_occupancy.h calculator with the device's
 * properties, the kernel's registers and shared memory, default device state
 * (no carveout preference) and default function attributes, then reports
 *   (int)(0.5 + 100 * min(active blocks per SM, grid / SMs) * block / max threads per SM).
 * This is our own C rendering of the same per-SM limits (warps, blocks,
 * registers, shared memory) for compute capability 7.0 to 12.x; torch users
 * compare the number across tools, so it must agree. */

typedef struct ft__occ_device {
  int major, minor;
  int sm_count;
  int max_threads_per_block;
  int max_threads_per_sm;
  int regs_per_block;
  int regs_per_sm;
  int warp_size;
  size_t smem_per_block; /* the 48 KiB default limit */
  size_t smem_per_sm;
  size_t reserved_smem_per_block;
} ft__occ_device;

static inline int ft__occ_div_up(int x, int y) { return (x + y - 1) / y; }
static inline int ft__occ_round_up(int x, int y) { return y * ft__occ_div_up(x, y); }
static inline int ft__occ_min(int a, int b) { return a < b ? a : b; }

static inline int ft__occ_max_blocks_per_sm(const ft__occ_device *d) {
  switch (d->major) {
  case 7: return d->minor == 5 ? 16 : 32;
  case 8: return d->minor == 0 ? 32 : d->minor == 9 ? 24 : 16;
  case 9: return 32;
  case 10: return d->minor == 1 ? 24 : 32; /* per the CUDA 13 tables */
  case 11: return d->minor == 0 ? 24 : 32;
  case 12: return 24;
  default: return -1;
  }
}

/* Rounds a shared-memory carveout request up to a size the SM supports. */
static inline int ft__occ_align_carveout(const ft__occ_device *d, size_t *size) {
  static const unsigned volta[] = {0, 8, 16, 32, 64, 96};
  static const unsigned ampere[] = {0, 8, 16, 32, 64, 100, 132, 164};
  static const unsigned small[] = {0, 8, 16, 32, 64, 100};
  static const unsigned hopper[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
  const unsigned *steps;
  size_t n;
  if (d->major == 7 && d->minor == 5) {
    *size = *size <= 32 * 1024 ? 32 * 1024 : 64 * 1024;
    return *size <= 64 * 1024 ? 0 : -1;
  }
  if (d->major == 7) steps = volta, n = 6;
  else if (d->major == 8 && (d->minor == 0 || d->minor == 7)) steps = ampere, n = 8;
  else if (d->major == 8 || d->major == 12) steps = small, n = 6;
  else if (d->major >= 9 && d->major <= 11) steps = hopper, n = 10;
  else return -1;
  for (size_t i = 0; i < n; i++) {
    if (*size <= (size_t)steps[i] * 1024) {
      *size = (size_t)steps[i] * 1024;
      return 0;
    }
  }
  return -1;
}

/* Active blocks per SM for the kernel, or -1 when the device is not one the
 * calculator knows (kineto then reports no occupancy either). */
static inline int ft__occ_active_blocks(const ft__occ_device *d, int block_size, int regs_per_thread,
                                        size_t static_smem, size_t dynamic_smem) {
  if (d->major < 7 || d->major > 12 || block_size <= 0 || d->warp_size <= 0 || d->sm_count <= 0) return -1;
  int max_blocks = ft__occ_max_blocks_per_sm(d);
  if (max_blocks < 0) return -1;
  int warps_per_cta = ft__occ_div_up(block_size, d->warp_size);

  /* registers: 256-register allocation units, four sub-partitions */
  int regs_limit;
  int regs_per_warp = ft__occ_round_up(regs_per_thread * d->warp_size, 256);
  if (d->regs_per_block < regs_per_warp * ft__occ_round_up(warps_per_cta, 4) ||
      d->regs_per_block < regs_per_warp * warps_per_cta || regs_per_thread > 256)
    regs_limit = 0;
  else if (regs_per_warp > 0) regs_limit = (d->regs_per_sm / 4 / regs_per_warp) * 4 / warps_per_cta;
  else regs_limit = INT_MAX;

  int warps_limit = block_size > d->max_threads_per_block ? 0 : (d->max_threads_per_sm / d->warp_size) / warps_per_cta;

  /* shared memory: 128-byte granules (256 before sm_80), the per-block reserve,
   * and the default (whole-SM) carveout */
  int gran = d->major >= 8 ? 128 : 256;
  size_t reserved = d->reserved_smem_per_block;
  size_t per_cta = (size_t)ft__occ_round_up((int)(static_smem + reserved + dynamic_smem), gran);
  size_t limit_per_cta = d->smem_per_block + (d->major >= 8 ? reserved : 0);
  int smem_limit;
  if (per_cta > limit_per_cta) {
    smem_limit = 0;
  } else {
    size_t pref = d->smem_per_sm;
    if (ft__occ_align_carveout(d, &pref)) return -1;
    size_t sm_smem = pref;
    if (pref < per_cta) {
      sm_smem = per_cta;
      if (ft__occ_align_carveout(d, &sm_smem)) return -1;
    }
    smem_limit = per_cta ? (int)(sm_smem / per_cta) : INT_MAX;
  }
  return ft__occ_min(regs_limit, ft__occ_min(smem_limit, ft__occ_min(warps_limit, max_blocks)));
}

#endif
