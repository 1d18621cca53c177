#include <cstdio>

int main(int, char**) {
  std::puts("zerofold");
  return 0;
}
