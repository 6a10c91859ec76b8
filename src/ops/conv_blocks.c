/* What a desc's forced blockings may say (tt_conv_blocks, conv_algo.h). */
#include "ops/conv_algo.h"

#include "core/status.h"

static int pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

static tt_status refuse(const char *field, const char *what)
{
    return tt_error_new(TT_ERR_INVALID_ARGUMENT, "conv blocks: %s %s", field, what);
}

/* Whether `b` forces anything of `algo`'s rows: which fields a row reads. */
static int reads_igemm(tt_conv_algo a) { return a == TT_CONV_ALGO_IMPLICIT_GEMM; }
static int reads_w16(tt_conv_algo a) { return a == TT_CONV_ALGO_DIRECT_W16; }
static int reads_w4(tt_conv_algo a)
{
    return a == TT_CONV_ALGO_WINOGRAD4 || a == TT_CONV_ALGO_WINOGRAD4_SUM;
}

tt_status tt_conv_blocks_check(const tt_conv_blocks *b, tt_conv_algo algo)
{
    const int igemm[5] = {b->igemm_rm, b->igemm_rn, b->igemm_bk, b->igemm_mt, b->igemm_nt};
    int any_igemm = 0, all_igemm = 1;
    for (int i = 0; i < 5; i++) any_igemm |= igemm[i] != 0, all_igemm &= igemm[i] != 0;
    int any = any_igemm || b->igemm_slice || b->w16_band_rows || b->w16_weight_band_bytes ||
              b->w16_partial_floats || b->w4_chunk_tiles;
    if (!any) return NULL;
    if (algo == TT_CONV_ALGO_AUTO)
        return refuse("are set", "with algorithm auto: they force a named algorithm's sizes "
                                 "(auto times each algorithm with its own)");
    if ((any_igemm || b->igemm_slice) && !reads_igemm(algo))
        return refuse("igemm_*", "are implicit_gemm's; another algorithm would ignore them");
    if ((b->w16_band_rows || b->w16_weight_band_bytes || b->w16_partial_floats) && !reads_w16(algo))
        return refuse("w16_*", "are direct_w16's; another algorithm would ignore them");
    if (b->w4_chunk_tiles && !reads_w4(algo))
        return refuse("w4_chunk_tiles", "is winograd4x4's and winograd4x4_sum's");
    if (any_igemm && !all_igemm)
        return refuse("igemm_rm, _rn, _bk, _mt, _nt", "come all five or none");
    if (any_igemm &&
        (b->igemm_rm < 1 || b->igemm_rm > 8 ||
         (b->igemm_rn != 4 && b->igemm_rn != 8 && b->igemm_rn != 16) || !pow2(b->igemm_bk) ||
         b->igemm_bk < b->igemm_rn || !pow2(b->igemm_mt) || !pow2(b->igemm_nt)))
        return refuse("igemm tile", "takes rm 1..8, rn 4, 8 or 16, bk a power of two >= rn, "
                                    "mt and nt powers of two");
    if (b->igemm_slice < 0 || b->w16_band_rows < 0 || b->w16_weight_band_bytes < 0 ||
        b->w16_partial_floats < 0 || b->w4_chunk_tiles < 0)
        return refuse("sizes", "must be >= 0 (0: the algorithm's own)");
    return NULL;
}
