# Install rules and the Debian package (CPack DEB): scripts/package.sh builds
# zerolayer_VERSION_ARCH.deb, scripts/package_test.sh installs and tries it.
#
#   /usr/bin/zerolayer                              the server and CLI
#   /usr/lib/<multiarch>/libzerolayer_client.so.0   the C client (+ .so, .a)
#   /usr/lib/<multiarch>/pkgconfig/zerolayer-client.pc
#   /usr/include/zerolayer/{client,shm_protocol,stats_protocol}.h
#   /usr/lib/python3/dist-packages/zerolayer_client.py
#   /usr/lib/systemd/system/zerolayer.service      not enabled on install
#   /etc/default/zerolayer                          the service's ZEROLAYER_* (conffile)
#
# The multiarch library directory comes from GNUInstallDirs when
# CMAKE_INSTALL_PREFIX is /usr (package.sh sets it). The other public headers
# (engine.h, ...) are the engine's C++ API, which is not a shipped library.
include(GNUInstallDirs)

set(ZL_INSTALL_PYTHONDIR lib/python3/dist-packages CACHE STRING
    "Where zerolayer_client.py goes, relative to the prefix (Debian's python3 reads /usr/lib/python3/dist-packages)")
set(ZL_PACKAGE_MAINTAINER "zerolayer maintainers <maintainers@users.noreply.a-seed-3010a09b.example>"
    CACHE STRING "Maintainer field of the Debian package")

install(TARGETS zerolayer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS zerolayer_client zerolayer_client_static
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# client.h includes shm_protocol.h; stats_protocol.h specifies the stats
# region inside the same segment (for monitors). All three are plain C.
install(FILES include/zerolayer/client.h include/zerolayer/shm_protocol.h include/zerolayer/stats_protocol.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zerolayer)
set(ZL_PC_LIBDIR ${CMAKE_INSTALL_FULL_LIBDIR})
set(ZL_PC_INCLUDEDIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
configure_file(packaging/zerolayer-client.pc.in ${PROJECT_BINARY_DIR}/packaging/zerolayer-client.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/zerolayer-client.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES clients/python/zerolayer_client.py DESTINATION ${ZL_INSTALL_PYTHONDIR})
install(FILES packaging/zerolayer.service DESTINATION lib/systemd/system)
# Absolute: the unit names /etc/default/zerolayer whatever the prefix.
install(FILES packaging/zerolayer.default DESTINATION /etc/default RENAME zerolayer)

# --- Debian package ---------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zerolayer)
set(CPACK_PACKAGE_VENDOR zerolayer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "${ZL_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ZL_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "LLM inference server with an OpenAI-compatible HTTP API")
# The summary above is the Description's first line; CPack indents these lines
# and turns the empty one into " .".
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "zerolayer serves Hugging Face, GGUF and built-in synthetic models on an
OpenAI-compatible HTTP API (completions, chat, responses) and on a
shared-memory transport for local clients.

This package holds the zerolayer server and CLI, a systemd unit
(zerolayer.service, configured by /etc/default/zerolayer; not enabled on
install), the shared-memory client library for C (libzerolayer_client,
its headers and pkg-config file) and the pure-Python client module
zerolayer_client.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)   # zerolayer_VERSION_ARCH.deb
# Shared-library dependencies from dpkg-shlibdeps (dpkg-dev). libatomic1 is
# what zerolayer_client.py loads through ctypes, which dpkg-shlibdeps cannot
# see; python3 only for that module.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libatomic1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3")
# A shlibs file for libzerolayer_client.so.0, so that packages built against
# it depend on this one.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_STRIP_FILES ON)
# Maintainer scripts (packaging/postinst, prerm, postrm) touch systemd only
# when it runs (/run/systemd/system), so installing in a container works.
# They never enable or start the service: the model to serve is the
# administrator's choice (/etc/default/zerolayer, then systemctl enable --now
# zerolayer). `triggers` runs ldconfig for the client library; `conffiles`
# keeps an edited /etc/default/zerolayer across upgrades and removal.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/conffiles "/etc/default/zerolayer\n")
file(WRITE ${PROJECT_BINARY_DIR}/packaging/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm ${PROJECT_BINARY_DIR}/packaging/conffiles
    ${PROJECT_BINARY_DIR}/packaging/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
