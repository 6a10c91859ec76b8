/* The double-precision reference of the focal loss; see ref_focal.h. */
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
