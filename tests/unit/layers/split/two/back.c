/* back.c -- fixture of check_layers: the other half, in another directory. */
int front_take(int x);

int back_fill(int x) { return x > 0 ? front_take(x - 1) : 0; }
