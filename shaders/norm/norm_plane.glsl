/* The plane functions of shaders/norm/ (opencl/norm.cl's norm_plane_of,
 * norm_grad): include after NORM_PLANE_BUFFERS and a push-constant block
 * `args` with NORM_PLANE_PUSH. */

/* What one work-item needs to know of its plane p. */
struct norm_plane {
    int s, c;      /* statistic, channel */
    float mean, r; /* r = rstd, or 1/sqrt(var + eps) */
    float w, b;    /* weight (1 if absent), bias (0 if absent) */
};

norm_plane norm_plane_of(int p)
{
    norm_plane q;
    q.c = p % args.channels;
    q.s = (p / args.channels) * args.stat_n_stride + q.c / args.channels_per_stat;
    q.mean = TT_B(mean)[TT_AT(args.mean_offset, 4) + q.s];
    float st = TT_B(stat)[TT_AT(args.stat_offset, 4) + q.s];
    q.r = args.stat_is_var != 0 ? inversesqrt(st + args.eps) : st;
    q.w = args.has_weight != 0 ? TT_B(weight)[TT_AT(args.weight_offset, 4) + q.c] : 1.0;
    q.b = args.has_bias != 0 ? TT_B(bias)[TT_AT(args.bias_offset, 4) + q.c] : 0.0;
    return q;
}

/* The gradient at the norm's output: dy, or with relu dy where the norm's
 * value is > 0 and 0 elsewhere. */
float norm_grad(float dy, float x, norm_plane q)
{
    if (args.relu == 0) return dy;
    return norm_value(x, q.mean, q.r, q.w, q.b) > 0.0 ? dy : 0.0;
}
