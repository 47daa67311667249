# Toolchain file: cross-compile for 64-bit Windows with Debian's mingw-w64.
#
#   cmake -S . -B build-mingw -DCMAKE_TOOLCHAIN_FILE=packaging/windows/mingw-w64-x86_64.cmake \
#         -DCHORUS_MINGW_DEPS_PREFIX=/path/to/cross-built/deps \
#         -DCHORUS_GUI=OFF -DCHORUS_CUDA=OFF -DCHORUS_TESTS=OFF
#
# The "-posix" compilers are used on purpose: the default "-win32" thread model of GCC 12
# has no std::thread / std::mutex.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_triplet x86_64-w64-mingw32)

find_program(CMAKE_C_COMPILER NAMES ${_triplet}-gcc-posix REQUIRED)
find_program(CMAKE_CXX_COMPILER NAMES ${_triplet}-g++-posix REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${_triplet}-windres REQUIRED)
find_program(CMAKE_AR NAMES ${_triplet}-gcc-ar-posix ${_triplet}-ar REQUIRED)
find_program(CMAKE_RANLIB NAMES ${_triplet}-gcc-ranlib-posix ${_triplet}-ranlib REQUIRED)

# - compat/: the POSIX calls mingw-w64 lacks (timegm, dlopen, readlink of /proc/self/exe),
#   force-included so engine sources build unchanged.
# - -muse-unaligned-vector-move: GCC does not realign the stack for 32-byte AVX spills on
#   Win64 (GCC bug 54412); the assembler turns the aligned moves into unaligned ones.
# - -static: libstdc++, libgcc and winpthread go into the exe, so no mingw DLLs ship.
set(_compat ${CMAKE_CURRENT_LIST_DIR}/compat)
set(CMAKE_CXX_FLAGS_INIT "-isystem ${_compat} -include ${_compat}/chorus_posix_compat.h -Wa,-muse-unaligned-vector-move")
set(CMAKE_C_FLAGS_INIT "-Wa,-muse-unaligned-vector-move")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

# Libraries cross-built for this target (PCRE2) live under CHORUS_MINGW_DEPS_PREFIX.
# Passed on to try_compile projects so their configure checks see the same setting.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CHORUS_MINGW_DEPS_PREFIX)
set(CMAKE_FIND_ROOT_PATH /usr/${_triplet} ${CHORUS_MINGW_DEPS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must read the target's .pc files only, never the build machine's.
if(CHORUS_MINGW_DEPS_PREFIX)
  set(ENV{PKG_CONFIG_LIBDIR} "${CHORUS_MINGW_DEPS_PREFIX}/lib/pkgconfig")
else()
  set(ENV{PKG_CONFIG_LIBDIR} "/usr/${_triplet}/lib/pkgconfig")
endif()
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Run the test programs and any target executable through Wine when it is there.
find_program(_wine NAMES wine wine64)
if(_wine)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${_wine})
endif()
