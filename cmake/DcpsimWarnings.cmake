# Project-wide compile flags: warnings (errors with DCPSIM_WERROR), sanitizers, static runtime.
add_library(dcpsim_flags INTERFACE)
target_compile_options(dcpsim_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter>)
if(DCPSIM_WERROR)
  target_compile_options(dcpsim_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                                $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
if(DCPSIM_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_compile_options(dcpsim_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_san}>)
  target_link_options(dcpsim_flags INTERFACE ${_san})
endif()
if(DCPSIM_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DCPSIM_BUILD_FUZZERS needs clang (CMAKE_CXX_COMPILER=clang++-14)")
  endif()
  # Coverage feedback for every library the fuzzers link; the fuzzers themselves link -fsanitize=fuzzer.
  target_compile_options(dcpsim_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
if(DCPSIM_STATIC_RUNTIME)
  target_link_options(dcpsim_flags INTERFACE -static-libstdc++ -static-libgcc)
endif()

# dcpsim_unity(<target> <sources per batch>): with DCPSIM_UNITY_BUILD, the target's C++ sources compile as
# batches that include several files each, so headers such as CLI11, GoogleTest, nlohmann/json and Protobuf are
# parsed and their inline functions emitted once per batch instead of once per file (what scripts/test.sh
# uses). Files of one target then share their anonymous namespaces: file-local helpers need distinct names.
function(dcpsim_unity target batch)
  if(DCPSIM_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch})
  endif()
endfunction()
