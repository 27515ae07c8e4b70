/* Forward argument checks (see forward_check.h). */
#include "models/forward_check.h"

#include "lib/base/error.h"

hsd_status hsd_forward_check(const char *who, const int32_t *tokens, int32_t n,
                             const int32_t *parents, const int32_t *rows, int32_t n_rows,
                             bool has_logits, int32_t vocab, int32_t kv_len, int32_t n_ctx) {
    if (n <= 0 || !tokens)
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: need n > 0 tokens (n = %d%s)", who, n,
                         tokens ? "" : ", tokens NULL");
    if (n_rows < 0 || n_rows > n || (n_rows > 0 && !has_logits) ||
        (!rows && n_rows != 0 && n_rows != n))
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: n_rows %d (of %d) with rows %s and logits %s",
                         who, n_rows, n, rows ? "given" : "NULL", has_logits ? "given" : "NULL");
    for (int32_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "%s: token %d at index %d is outside the vocabulary of %d", who,
                             tokens[i], i, vocab);
        if (parents && (parents[i] < -1 || parents[i] >= i))
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "%s: parents[%d] = %d (must be -1 or an earlier index)", who, i,
                             parents[i]);
    }
    for (int32_t r = 0; rows && r < n_rows; r++)
        if (rows[r] < 0 || rows[r] >= n)
            return hsd_error(HSD_ERR_OUT_OF_RANGE, "%s: rows[%d] = %d outside 0..%d", who, r,
                             rows[r], n - 1);
    if (n_ctx > 0 && (int64_t)kv_len + n > n_ctx)
        return hsd_error(HSD_ERR_OUT_OF_RANGE,
                         "%s: %d cached + %d new tokens exceed the context of %d", who, kv_len, n,
                         n_ctx);
    return HSD_OK;
}
