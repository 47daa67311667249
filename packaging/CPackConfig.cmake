# Packaging: install rules for the files a desktop expects (desktop entry, icons, AppStream
# metainfo, licence) and the CPack setup that turns an install tree into packages.
#   Linux:   .deb, .rpm, .tar.gz        (cpack in the build dir; see packaging/README-install.md)
#   Windows: NSIS installer + .zip      (MSVC build with windeployqt, or the mingw-w64 cross
#                                        build of the engine and chorus-cli)
# Included from the top-level CMakeLists.txt after every target is defined, so `TARGET x`
# tells which optional parts (GUI, CUDA backend) this build has.

# The desktop-file id and icon name are "chorus": Qt derives the Wayland app id and the X11
# WM_CLASS from the application name "chorus", so the compositor matches windows to this
# entry. AppStream wants a reverse-DNS component id.
set(CHORUS_DESKTOP_ID chorus)
set(CHORUS_APPSTREAM_ID io.github.chorus.Chorus)
set(CHORUS_PKG_DIR ${CMAKE_CURRENT_LIST_DIR})
# The CUDA backend is a plug-in, not a link dependency: the engine dlopen()s it from
# <exe dir>/../lib when a driver is present (a missing file just means CPU only).
set(CHORUS_BACKEND_INSTALL_DIR lib CACHE STRING
    "Where the optional run-time loaded backends are installed, relative to the prefix")

# ---- licence --------------------------------------------------------------------------
if(WIN32)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION . RENAME LICENSE.txt)
else()
  # Debian looks for doc/<package>/copyright, RPM-based systems for licenses/<package>/.
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/chorus
          RENAME copyright)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/licenses/chorus)
endif()

# ---- desktop integration (only when the GUI is part of this build) ---------------------
if(TARGET chorus AND NOT WIN32)
  set(_linux ${CHORUS_PKG_DIR}/linux)
  install(FILES ${_linux}/${CHORUS_DESKTOP_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${_linux}/${CHORUS_APPSTREAM_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES ${_linux}/${CHORUS_DESKTOP_ID}.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)

  # Fixed-size renders for menus and docks that do not scale SVG. Made at build time from
  # the SVG so there is one source of truth; without a renderer the scalable icon suffices.
  find_program(CHORUS_RSVG_CONVERT rsvg-convert)
  if(CHORUS_RSVG_CONVERT)
    set(_pngs)
    foreach(_px 48 128 256)
      set(_png ${CMAKE_BINARY_DIR}/packaging/icons/${_px}x${_px}/${CHORUS_DESKTOP_ID}.png)
      add_custom_command(OUTPUT ${_png}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging/icons/${_px}x${_px}
        COMMAND ${CHORUS_RSVG_CONVERT} -w ${_px} -h ${_px} -o ${_png} ${_linux}/${CHORUS_DESKTOP_ID}.svg
        DEPENDS ${_linux}/${CHORUS_DESKTOP_ID}.svg
        COMMENT "Rendering ${_px}x${_px} application icon" VERBATIM)
      list(APPEND _pngs ${_png})
      install(FILES ${_png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${_px}x${_px}/apps)
    endforeach()
    add_custom_target(chorus_icons ALL DEPENDS ${_pngs})
  else()
    message(STATUS "rsvg-convert not found: packages get only the scalable (SVG) icon "
                   "(apt-get install librsvg2-bin for the 48/128/256 px renders)")
  endif()

  # Let the build tree check what it ships (the CI step runs these too).
  find_program(CHORUS_DESKTOP_FILE_VALIDATE desktop-file-validate)
  find_program(CHORUS_APPSTREAMCLI appstreamcli)
  if(CHORUS_TESTS AND CHORUS_DESKTOP_FILE_VALIDATE)
    add_test(NAME packaging.desktop_file
             COMMAND ${CHORUS_DESKTOP_FILE_VALIDATE} ${_linux}/${CHORUS_DESKTOP_ID}.desktop)
  endif()
  if(CHORUS_TESTS AND CHORUS_APPSTREAMCLI)
    add_test(NAME packaging.metainfo
             COMMAND ${CHORUS_APPSTREAMCLI} validate --no-net ${_linux}/${CHORUS_APPSTREAM_ID}.metainfo.xml)
  endif()
endif()

# ---- optional CUDA backend: its own component ------------------------------------------
if(TARGET chorus_cuda)
  install(TARGETS chorus_cuda
          LIBRARY DESTINATION ${CHORUS_BACKEND_INSTALL_DIR} COMPONENT cuda
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cuda)
  if(WIN32)
    # The CUDA runtime DLLs the backend links against are redistributable; the driver
    # (nvcuda.dll) is not and comes with the user's NVIDIA driver.
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      file(GLOB _cuda_dlls ${CUDAToolkit_BIN_DIR}/cudart64_*.dll
           ${CUDAToolkit_BIN_DIR}/cublas64_*.dll ${CUDAToolkit_BIN_DIR}/cublasLt64_*.dll)
      install(FILES ${_cuda_dlls} DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cuda)
    endif()
  endif()
endif()

# ---- Windows: bring the Qt run time next to chorus.exe ---------------------------------
if(WIN32 AND TARGET chorus)
  # Qt6_DIR is <Qt>/lib/cmake/Qt6; windeployqt sits in <Qt>/bin.
  find_program(CHORUS_WINDEPLOYQT windeployqt HINTS "${Qt6_DIR}/../../../bin" REQUIRED)
  # windeployqt runs on the installed exe, so `cmake --install` and every CPack generator
  # get the Qt DLLs, the platform/style/sqldriver plug-ins and the VC++ redistributable.
  install(CODE "
    execute_process(COMMAND \"${CHORUS_WINDEPLOYQT}\" --release --no-translations
                            --no-system-d3d-compiler --no-opengl-sw --compiler-runtime
                            \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/chorus.exe\"
                    COMMAND_ERROR_IS_FATAL ANY)")
endif()

# ---- CPack: common ---------------------------------------------------------------------
set(CPACK_PACKAGE_NAME chorus)
set(CPACK_PACKAGE_VENDOR "The Chorus authors")
set(CPACK_PACKAGE_CONTACT "The Chorus authors <chorus@users.noreply.github.com>")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://github.com/chorus/chorus")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
# Line breaks are kept: Debian shows the long description as written.
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "Chorus is a desktop chat application for language models that run on your\n"
  "own computer. Every conversation is a tab; all active conversations are\n"
  "decoded together in one batched step. It reads GGUF models (Llama, Mistral,\n"
  "SmolLM, Qwen2) and runs on the CPU, or on NVIDIA GPUs through the optional\n"
  "CUDA backend (package chorus-cuda). chorus-cli is the headless front end.")
set(CPACK_PACKAGE_INSTALL_DIRECTORY Chorus)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_VERBATIM_VARIABLES ON)

# Components. Everything the app itself installs carries CMake's default component name,
# "Unspecified"; the CUDA backend is "cuda". DEB and RPM make one package per component
# (chorus, chorus-cuda); archives and the NSIS installer carry both.
get_cmake_property(CPACK_COMPONENTS_ALL COMPONENTS)
set(CPACK_COMPONENT_UNSPECIFIED_DISPLAY_NAME "Chorus")
set(CPACK_COMPONENT_UNSPECIFIED_DESCRIPTION "The application, the command-line tool and the CPU backend.")
set(CPACK_COMPONENT_UNSPECIFIED_REQUIRED ON)
set(CPACK_COMPONENT_CUDA_DISPLAY_NAME "NVIDIA GPU backend")
set(CPACK_COMPONENT_CUDA_DESCRIPTION
    "Runs models on NVIDIA GPUs. Used only when an NVIDIA driver is installed; without it Chorus uses the CPU.")
set(CPACK_COMPONENT_CUDA_DEPENDS Unspecified)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(_arch x86_64)
else()
  set(_arch ${CMAKE_SYSTEM_PROCESSOR})
endif()

if(WIN32)
  # ---- Windows: NSIS installer (+ zip) -------------------------------------------------
  set(CPACK_GENERATOR NSIS ZIP)
  set(CPACK_PACKAGE_FILE_NAME chorus-${PROJECT_VERSION}-windows-${_arch})
  if(NOT TARGET chorus)
    set(CPACK_PACKAGE_FILE_NAME chorus-cli-${PROJECT_VERSION}-windows-${_arch})
  endif()
  set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
  set(CPACK_NSIS_PACKAGE_NAME "Chorus ${PROJECT_VERSION}")
  set(CPACK_NSIS_DISPLAY_NAME "Chorus")
  set(CPACK_NSIS_INSTALL_ROOT "$PROGRAMFILES64")
  set(CPACK_NSIS_URL_INFO_ABOUT ${CPACK_PACKAGE_HOMEPAGE_URL})
  set(CPACK_NSIS_CONTACT ${CPACK_PACKAGE_CONTACT})
  set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
  # chorus-cli is a command-line tool: offer to put bin\ on PATH.
  set(CPACK_NSIS_MODIFY_PATH ON)
  set(CPACK_NSIS_UNINSTALL_NAME "Uninstall")
  if(CMAKE_HOST_UNIX)
    # Debian's makensis ships 64-bit stubs (the official Windows NSIS has x86 ones only): a
    # 64-bit installer for a 64-bit program, which also runs under a 64-bit-only Wine.
    set(CPACK_NSIS_EXECUTABLE ${CHORUS_PKG_DIR}/windows/makensis-amd64.sh)
  endif()
  if(TARGET chorus)
    set(CPACK_PACKAGE_EXECUTABLES chorus "Chorus")
    set(CPACK_CREATE_DESKTOP_LINKS chorus)
    set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\chorus.exe")
  endif()
else()
  # ---- Linux: DEB, RPM, TGZ ------------------------------------------------------------
  set(CPACK_GENERATOR DEB RPM TGZ)
  set(CPACK_PACKAGE_FILE_NAME chorus-${PROJECT_VERSION}-linux-${_arch})
  set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_RPM_COMPONENT_INSTALL ON)

  # DEB. Library dependencies come from dpkg-shlibdeps; what Qt loads as plug-ins at run
  # time (the SQLite driver for the chat store) is invisible to it and listed by hand.
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_SECTION utils)
  set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_NAME chorus)
  # CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY on the first line.
  set(CPACK_DEBIAN_UNSPECIFIED_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
  set(CPACK_DEBIAN_CUDA_DESCRIPTION "NVIDIA GPU backend for Chorus.\n${CPACK_COMPONENT_CUDA_DESCRIPTION}")
  if(TARGET chorus)
    set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_DEPENDS "libqt6sql6-sqlite")
    set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_RECOMMENDS "qt6-qpa-plugins")
  endif()
  set(CPACK_DEBIAN_UNSPECIFIED_PACKAGE_SUGGESTS "chorus-cuda")
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME chorus-cuda)
  # libcuda.so.1 belongs to the NVIDIA driver, which is exactly what may be missing: the
  # backend package depends on Chorus only, and the driver is a recommendation.
  set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "chorus (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_CUDA_PACKAGE_RECOMMENDS "libcuda1 | nvidia-driver-libs")
  set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION contrib/utils)

  # RPM. rpmbuild's automatic requirements do what shlibdeps does for DEB.
  set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
  set(CPACK_RPM_PACKAGE_LICENSE MIT)
  set(CPACK_RPM_PACKAGE_RELEASE 1)
  set(CPACK_RPM_PACKAGE_GROUP "Applications/Productivity")
  set(CPACK_RPM_PACKAGE_URL ${CPACK_PACKAGE_HOMEPAGE_URL})
  set(CPACK_RPM_PACKAGE_AUTOREQ ON)
  set(CPACK_RPM_PACKAGE_AUTOPROV ON)
  # /usr/lib/.build-id links would make two packages built from one tree conflict.
  set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")
  set(CPACK_RPM_UNSPECIFIED_PACKAGE_NAME chorus)
  set(CPACK_RPM_UNSPECIFIED_PACKAGE_SUMMARY "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}")
  set(CPACK_RPM_UNSPECIFIED_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
  set(CPACK_RPM_CUDA_PACKAGE_SUMMARY "NVIDIA GPU backend for Chorus")
  set(CPACK_RPM_UNSPECIFIED_FILE_NAME RPM-DEFAULT)
  set(CPACK_RPM_CUDA_PACKAGE_NAME chorus-cuda)
  set(CPACK_RPM_CUDA_FILE_NAME RPM-DEFAULT)
  set(CPACK_RPM_CUDA_PACKAGE_AUTOREQ OFF)
  set(CPACK_RPM_CUDA_PACKAGE_REQUIRES "chorus = ${PROJECT_VERSION}")
  # Shared directories belong to the filesystem / icon theme packages, not to Chorus.
  set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
      /usr/share/applications /usr/share/metainfo /usr/share/licenses /usr/share/doc
      /usr/share/icons /usr/share/icons/hicolor /usr/share/icons/hicolor/scalable
      /usr/share/icons/hicolor/scalable/apps /usr/share/icons/hicolor/48x48
      /usr/share/icons/hicolor/48x48/apps /usr/share/icons/hicolor/128x128
      /usr/share/icons/hicolor/128x128/apps /usr/share/icons/hicolor/256x256
      /usr/share/icons/hicolor/256x256/apps)
endif()

include(CPack)
