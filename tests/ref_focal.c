/* Double-precision references of the focal loss and the class-weighted BCE
 * and softmax cross-entropy; see ref_focal.h. */
#include "ref_focal.h"

#include <math.h>

static double sigmoid(double x)
{
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

double ref_focal_term(double x, int t, double gamma, double alpha, double *grad)
{
    double s = t ? 1 : -1;
    double pt = sigmoid(s * x), q = sigmoid(-s * x); /* q = 1 - pt, no cancellation */
    double b = fmax(x, 0) - x * t + log1p(exp(-fabs(x)));
    double at = alpha < 0 ? 1 : (t ? alpha : 1 - alpha);
    double modulator = gamma == 0 ? 1 : pow(q, gamma);
    if (grad) {
        double p_minus_t = t ? -q : sigmoid(x);
        /* q^(gamma-1) pt b: at q = 0 the limit, 0 for gamma > 0 (b -> 0 as q) */
        double first = gamma == 0 || q == 0 ? 0 : gamma * pow(q, gamma - 1) * pt * b;
        *grad = at * p_minus_t * (first + modulator);
    }
    return at * modulator * b;
}

double ref_focal(const double *logits, const uint8_t *targets, int n, int c, int hw, int ignore,
                 int class_index, double gamma, double alpha, const double *weights, long *count,
                 long *invalid, double *dlogits)
{
    double sum = 0;
    long valid = 0, bad = 0;
    size_t items = (size_t)n * hw * (class_index ? 1 : c);
    for (size_t i = 0; i < items; i++) {
        int t = targets[i];
        if (t == ignore) continue;
        if (t >= (class_index ? c : 2)) {
            bad++;
            continue;
        }
        valid++;
        /* the planes of this item: all c of a pixel, or the element's own */
        size_t image = i / ((size_t)hw * (class_index ? 1 : c));
        size_t at = class_index ? image * c * hw + i % hw : i;
        int first = class_index ? 0 : (int)(i / hw % c), last = class_index ? c : first + 1;
        for (int k = first; k < last; k++) {
            size_t j = class_index ? at + (size_t)k * hw : at;
            double w = weights ? weights[k] : 1, grad;
            sum += w * ref_focal_term(logits[j], class_index ? k == t : t, gamma, alpha, &grad);
            if (dlogits) dlogits[j] += w * grad;
        }
    }
    if (count) *count = valid;
    if (invalid) *invalid = bad;
    return sum;
}

double ref_bce_weighted(const double *logits, const uint8_t *targets, int n, int c, int hw,
                        int ignore, const double *weights, long *count, double *dlogits)
{
    double sum = 0;
    long valid = 0;
    size_t total = (size_t)n * c * hw;
    for (size_t i = 0; i < total; i++) {
        int t = targets[i];
        if (t == ignore || t > 1) continue;
        double x = logits[i], w = weights ? weights[i / hw % c] : 1;
        sum += w * (fmax(x, 0) - x * t + log1p(exp(-fabs(x))));
        valid++;
        if (dlogits) dlogits[i] += w * (t ? -sigmoid(-x) : sigmoid(x));
    }
    if (count) *count = valid;
    return sum;
}

double ref_softmax_ce_weighted(const double *logits, const uint8_t *labels, int n, int c, int hw,
                               int ignore, const double *weights, long *count, double *dlogits)
{
    double sum = 0;
    long valid = 0;
    for (int i = 0; i < n; i++)
        for (int p = 0; p < hw; p++) {
            int label = labels[(size_t)i * hw + p];
            if (label == ignore || label >= c) continue;
            const double *x = logits + (size_t)i * c * hw + p;
            double m = x[0], e = 0, w = weights ? weights[label] : 1;
            for (int k = 1; k < c; k++) m = fmax(m, x[(size_t)k * hw]);
            for (int k = 0; k < c; k++) e += exp(x[(size_t)k * hw] - m);
            sum += w * (m + log(e) - x[(size_t)label * hw]);
            valid++;
            if (dlogits)
                for (int k = 0; k < c; k++)
                    dlogits[(size_t)i * c * hw + p + (size_t)k * hw] +=
                        w * (exp(x[(size_t)k * hw] - m) / e - (k == label));
        }
    if (count) *count = valid;
    return sum;
}
