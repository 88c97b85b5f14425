#pragma once
// The one shape of a typed launch: the element type chosen at run time becomes the kernel's template
// argument. f receives a tag whose ::type is float, __nv_bfloat16 or __half:
//   with_elem(a.elem, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     launch_kernel("pack_kernel", pack_kernel<T>, grid, block, 0, stream, a);
//   });
#include "device_common.cuh"

namespace dcpsim::hw::ops {

template <typename T>
struct ElemTag {
  using type = T;
};

template <typename F>
void with_elem(Elem e, F&& f) {
  switch (e) {
    case Elem::kF32:
      f(ElemTag<float>{});
      return;
    case Elem::kBF16:
      f(ElemTag<__nv_bfloat16>{});
      return;
    case Elem::kF16:
      f(ElemTag<__half>{});
      return;
  }
}

}  // namespace dcpsim::hw::ops
