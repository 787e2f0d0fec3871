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
