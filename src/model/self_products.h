/* self_products.h — the self family's token products on values (C = 1,
 * the training pass; self_products.c), internal to src/model. Per point p,
 * head j, query token t and key token s over T tokens (rows p·T + t of
 * each array), dh columns per head, H heads, d = H·dh:
 *
 *   self_scores_values   S[(p,t), j·T + s] = scale ⟨Q_j[t], K_j[s]⟩
 *   self_values_values   O[(p,t), j·dh + i] = Σ_s P[(p,t), j·T + s] V_j[s, i]
 *   self_attention_backward, given dO:
 *     dP_j[t,s] = ⟨dO_j[t], V_j[s]⟩;   dV_j[s] = Σ_t P_j[t,s] dO_j[t]
 *     dS = P ⊙ (dP − ⟨P, dP⟩) per query and head
 *     dQ_j[t] = scale Σ_s dS_j[t,s] K_j[s];   dK_j[s] = scale Σ_t dS_j[t,s] Q_j[t]
 *
 * Every dot product and weighted sum adds its terms in ascending order from
 * 0, one rounding per operation: the bits depend only on the operands,
 * not on how points are grouped into vector lanes (docs/DECISIONS.md,
 * "The self family's token products across points"). Non-restrict
 * pointers: the arrays may share one allocation, in disjoint columns. */
#ifndef CURVSWEEP_MODEL_SELF_PRODUCTS_H
#define CURVSWEEP_MODEL_SELF_PRODUCTS_H

/* Q (ld ldq), K (ld ldk): d columns; out N·T × H·T. */
void self_scores_values(int N, int T, int H, int dh, double scale, const double *Q, int ldq,
                        const double *K, int ldk, double *out);
/* P N·T × H·T, V (ld ldv); out N·T × d. */
void self_values_values(int N, int T, int H, int dh, const double *P, const double *V, int ldv,
                        double *out);
/* P N·T × H·T, dO N·T × d, Q, K, V (ld ldq, ldk, ldv); dP N·T × H·T scratch
 * (dS on return); dQ, dK, dV (ld lddq, lddk, lddv) overwritten; they may
 * be column blocks of one array (disjoint columns). */
void self_attention_backward(int N, int T, int H, int dh, const double *P, const double *dO,
                             const double *Q, int ldq, const double *K, int ldk, const double *V,
                             int ldv, double *dP, double *dQ, int lddq, double *dK, int lddk,
                             double *dV, int lddv);

#endif
