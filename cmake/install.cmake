# Installation: library, header, tools, CMake package config
# (find_package(convjit) -> convjit::convjit) and pkg-config file (convjit.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(TARGET convjit)
  install(TARGETS convjit EXPORT convjitTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT convjitTargets NAMESPACE convjit:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convjit)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/convjit/convjit.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/convjit)
foreach(tool convjit-run convjit-dump)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/convjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/convjitConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convjit)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/convjitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/convjitConfig.cmake ${PROJECT_BINARY_DIR}/convjitConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/convjit)

# convjit.pc finds its prefix from its own directory (<libdir>/pkgconfig):
# one ".." per component of the relative libdir, plus one for pkgconfig.
set(CJ_PC_UP "..")
string(REPLACE "/" ";" cj_libdir_parts "${CMAKE_INSTALL_LIBDIR}")
foreach(part ${cj_libdir_parts})
  string(APPEND CJ_PC_UP "/..")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/convjit.pc.in ${PROJECT_BINARY_DIR}/convjit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/convjit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# (The header's CONVJIT_VERSION_* equal project()'s version: checked in
# CMakeLists.txt at configure time.)

# The Python package (python/convjit, docs/python.md) into
# <prefix>/${CJ_PYTHON_SITE} (cmake/python.cmake; for /usr/local on Debian
# /usr/local/lib/python3.X/dist-packages, on Debian python3's sys.path),
# plus two files written at install time, so that --prefix and DESTDIR
# count: _install_prefix.py (LIBDIR, the absolute libdir of this install,
# where convjit._lib looks after $CONVJIT_LIBRARY and the package's own
# directory) and _version.py (the header's version, as python/setup.py
# writes it into a wheel). No pip metadata: `pip install ./python` is the
# way to a distribution pip knows (then the library is found through
# $CONVJIT_LIBRARY, a copy next to the package or the loader's path).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/convjit DESTINATION ${CJ_PYTHON_SITE}
        PATTERN __pycache__ EXCLUDE PATTERN _install_prefix.py EXCLUDE PATTERN _version.py EXCLUDE)
install(CODE "set(cj_py_site \"${CJ_PYTHON_SITE}\")\nset(cj_libdir \"${CMAKE_INSTALL_LIBDIR}\")\nset(cj_version \"${CJ_HEADER_VERSION}\")")
install(CODE [[
  foreach(v cj_py_site cj_libdir)
    if(NOT IS_ABSOLUTE "${${v}}")
      set(${v} "${CMAKE_INSTALL_PREFIX}/${${v}}")
    endif()
  endforeach()
  set(pkg "$ENV{DESTDIR}${cj_py_site}/convjit")
  message(STATUS "Installing: ${pkg}/_install_prefix.py (LIBDIR ${cj_libdir}), ${pkg}/_version.py")
  file(WRITE "${pkg}/_install_prefix.py"
       "# Written by cmake --install (cmake/install.cmake): the libdir it installed libconvjit.so into.\nLIBDIR = \"${cj_libdir}\"\n")
  file(WRITE "${pkg}/_version.py"
       "# Written by cmake --install from include/convjit/convjit.h (CONVJIT_VERSION_*).\nVERSION = \"${cj_version}\"\n")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${pkg}/_install_prefix.py" "${pkg}/_version.py")
]])
