/* main: placeholder until the daemon lands in this same change series. */
#include <stdio.h>
int main(void)
{
    puts("trainyard " TY_VERSION);
    return 0;
}
