/* layering_main.c — the empty program each module is linked into whole, with
 * only its declared dependencies (cmake/layering.cmake): an undefined
 * reference there is a call into a module the layering does not allow. */
int main(void) { return 0; }
