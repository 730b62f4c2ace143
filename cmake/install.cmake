# install.cmake -- what `make install PREFIX=DIR` (and DESTDIR= for packagers) puts where: the
# one place of the installed layout (docs/install.md).
#
#   PREFIX/bin/prosper            -> ../lib/prosper/bin/prosper   (the front end; a symlink)
#   PREFIX/bin/prosper-sim        -> ../lib/prosper/build/sim/prosper-sim
#   PREFIX/bin/prosper-cc, -c++   the crpm compiler wrappers (find lib/ and include/ beside bin/)
#   PREFIX/lib/libprosper-{crpm,crpm-mpi,asl,nvm}.so.N, lib/pkgconfig/prosper-*.pc
#   PREFIX/include/prosper/       crpm.h crpm.hpp asl.hpp asl/ nvm.h
#   PREFIX/lib/prosper/           the front end's private tree, in the SHAPE OF THE SOURCE TREE:
#                                 bin/prosper, python/prosper, VERSION, bench/scripts and
#                                 build/ holding only the built tools (supervisor, shim, pool
#                                 tool, simulator, Valgrind tool, bench programs), so that the one
#                                 rule of bin/prosper and python/prosper/paths.py (root = the
#                                 front end's directory/..; build = root/build) serves both trees
#   PREFIX/lib/prosper/python-deps  the Python packages the front end imports (matplotlib), unless
#                                 -DPROSPER_INSTALL_PYTHON_DEPS=OFF (a distribution package
#                                 depends on its own python3-matplotlib instead)
#   PREFIX/share/man/man1/        prosper(1), prosper-SUBCOMMAND(1), prosper-sim(1), prosper-cc(1),
#                                 generated from their --help (scripts/manpages)
#   PREFIX/share/bash-completion/completions/prosper, PREFIX/share/doc/prosper/
#
# Invariant: nothing installed refers to the source tree or its build directory (RPATHs are
# $ORIGIN-relative or the prefix's lib/), so the clone may be deleted (tests/e2e/test_install.py).
option(PROSPER_INSTALL_PYTHON_DEPS "install matplotlib under PREFIX/lib/prosper/python-deps" ON)

set(PRIVATE lib/prosper)              # the private tree, relative to the prefix
set(PRIVATE_BUILD ${PRIVATE}/build)
# from PRIVATE_BUILD/<room>/<prog> up to PREFIX/lib: where an installed tool finds our libraries
set(TO_LIB "$ORIGIN/../../..")

# ---- the libraries users link, their headers and pkg-config files ------------------------------
set(public_libs prosper_crpm prosper_asl_shared prosper-nvm)
if(TARGET prosper_crpm_mpi)
  list(APPEND public_libs prosper_crpm_mpi)
endif()
install(TARGETS ${public_libs} LIBRARY DESTINATION lib)
# the pieces prosper-cc links into instrumented programs
install(TARGETS prosper_crpm_instrumented prosper_crpm_stdcxx ARCHIVE DESTINATION lib)
install(FILES include/prosper/crpm.h include/prosper/crpm.hpp include/prosper/asl.hpp include/prosper/nvm.h
        DESTINATION include/prosper)
install(DIRECTORY include/prosper/asl DESTINATION include/prosper)

# PKG: the name of a .pc.in beside its library; the prefix is the one given to `cmake --install`
function(prosper_install_pc dir name)
  install(CODE "
    file(READ ${CMAKE_SOURCE_DIR}/${dir}/${name}.pc.in pc)
    string(REPLACE @PREFIX@ \${CMAKE_INSTALL_PREFIX} pc \"\${pc}\")
    string(REPLACE @VERSION@ ${PROJECT_VERSION} pc \"\${pc}\")
    file(WRITE \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/pkgconfig/${name}.pc \"\${pc}\")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/pkgconfig/${name}.pc)
    message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/pkgconfig/${name}.pc\")")
endfunction()
prosper_install_pc(lib/crpm prosper-crpm)
prosper_install_pc(lib/asl prosper-asl)
prosper_install_pc(src/nvm prosper-nvm)
if(TARGET prosper_crpm_mpi)
  prosper_install_pc(lib/crpm prosper-crpm-mpi)
endif()

# ---- the private tree -------------------------------------------------------------------------
install(PROGRAMS bin/prosper DESTINATION ${PRIVATE}/bin)
install(FILES VERSION DESTINATION ${PRIVATE})
install(DIRECTORY python/prosper DESTINATION ${PRIVATE}/python
        FILES_MATCHING PATTERN "*.py" PATTERN "*.tsv" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY bench/scripts DESTINATION ${PRIVATE}/bench USE_SOURCE_PERMISSIONS)

install(TARGETS prosper-supervise RUNTIME DESTINATION ${PRIVATE_BUILD}/src/supervisor)
install(TARGETS prosper-shim LIBRARY DESTINATION ${PRIVATE_BUILD}/src/shim)
install(TARGETS prosper-pool RUNTIME DESTINATION ${PRIVATE_BUILD}/src/cli)
install(TARGETS prosper-sim RUNTIME DESTINATION ${PRIVATE_BUILD}/sim)
if(TARGET prosper_tool)
  # the tool beside links to Valgrind's own support files (tool/CMakeLists.txt); kept as links
  install(DIRECTORY ${CMAKE_BINARY_DIR}/tool/lib DESTINATION ${PRIVATE_BUILD}/tool USE_SOURCE_PERMISSIONS)
endif()

# The bench programs `prosper demo`, `eval` and `bench` run.
foreach(prog random stream sparse quicksort recursive normal poisson alloc wakeup_cost pr sssp kv
             pr_mt prodcons vmachurn pool_bench asl_bench stencil_mpi)
  if(TARGET ${prog})
    install(TARGETS ${prog} RUNTIME DESTINATION ${PRIVATE_BUILD}/bench)
  endif()
endforeach()
if(TARGET stencil_mpi)
  set_target_properties(stencil_mpi PROPERTIES INSTALL_RPATH "${TO_LIB}")  # libprosper-crpm-mpi
endif()
# ... and those built by prosper-c++ outside CMake's targets: their RPATH names the build tree,
# rewritten in place to the prefix's lib/ (it is shorter, so it fits).
if(TARGET crpm_bench)
  foreach(prog kv_crpm kv_crpm_inst kv_crpm_undo)
    install(PROGRAMS ${CMAKE_BINARY_DIR}/bench/${prog} DESTINATION ${PRIVATE_BUILD}/bench)
    install(CODE "file(RPATH_CHANGE FILE \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${PRIVATE_BUILD}/bench/${prog}
                       OLD_RPATH ${CMAKE_BINARY_DIR}/lib/crpm NEW_RPATH \"${TO_LIB}\")")
  endforeach()
endif()

# ---- commands on PATH -------------------------------------------------------------------------
install(PROGRAMS bin/prosper-cc DESTINATION bin)
install(CODE "
  set(bin \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin)
  file(CREATE_LINK ../${PRIVATE}/bin/prosper \${bin}/prosper SYMBOLIC)
  file(CREATE_LINK ../${PRIVATE_BUILD}/sim/prosper-sim \${bin}/prosper-sim SYMBOLIC)
  file(CREATE_LINK prosper-cc \${bin}/prosper-c++ SYMBOLIC)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \${bin}/prosper \${bin}/prosper-sim \${bin}/prosper-c++)
  message(STATUS \"Installing: \${bin}/prosper, prosper-sim, prosper-c++ (links)\")")

# ---- Python packages of the front end ---------------------------------------------------------
if(PROSPER_INSTALL_PYTHON_DEPS)
  install(CODE "
    set(deps \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${PRIVATE}/python-deps)
    message(STATUS \"Installing: matplotlib into \${deps}\")
    execute_process(COMMAND ${CMAKE_SOURCE_DIR}/scripts/python-deps \${deps} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR \"could not install the Python packages into \${deps}\")
    endif()
    file(GLOB_RECURSE installed LIST_DIRECTORIES false \${deps}/*)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \${installed})")
endif()

# ---- man pages, completion, docs --------------------------------------------------------------
install(CODE "
  set(man ${CMAKE_BINARY_DIR}/man)
  file(REMOVE_RECURSE \${man})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PROSPER_BUILD=${CMAKE_BINARY_DIR}
                          ${CMAKE_SOURCE_DIR}/scripts/manpages \${man} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR \"man pages could not be generated\")
  endif()
  file(GLOB pages \${man}/*.1)
  file(INSTALL \${pages} DESTINATION \${CMAKE_INSTALL_PREFIX}/share/man/man1)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PROSPER_BUILD=${CMAKE_BINARY_DIR}
                          ${CMAKE_SOURCE_DIR}/bin/prosper completion bash
                  OUTPUT_FILE ${CMAKE_BINARY_DIR}/prosper.bash-completion RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR \"the bash completion could not be generated\")
  endif()
  file(INSTALL ${CMAKE_BINARY_DIR}/prosper.bash-completion DESTINATION \${CMAKE_INSTALL_PREFIX}/share/bash-completion/completions
       RENAME prosper)")
install(FILES README.md DESTINATION share/doc/prosper)
install(DIRECTORY docs/ DESTINATION share/doc/prosper/docs FILES_MATCHING PATTERN "*.md")
