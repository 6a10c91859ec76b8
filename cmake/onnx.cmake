# ONNX export (src/deploy, `tiletrain export`): the IR subset in
# src/deploy/onnx_ir.proto compiled by protoc-c at build time, the messages
# packed by libprotobuf-c.  Without protobuf-c the library builds
# src/deploy/onnx_off.c instead, whose export says how to get it (as
# TT_VULKAN=OFF builds backend/vulkan_off.c).  Defines the static library
# tiletrain_deploy, which the command links.
option(TT_ONNX "ONNX export (tiletrain export; needs protobuf-c, else it says how to get it)" ON)
if(TT_ONNX)
  pkg_check_modules(PROTOBUF_C QUIET IMPORTED_TARGET libprotobuf-c)
  find_program(TT_PROTOC_C protoc-c)
endif()
file(GLOB TT_DEPLOY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/deploy/*.c)
if(TT_ONNX AND PROTOBUF_C_FOUND AND TT_PROTOC_C)
  set(TT_ONNX_GENERATED ${CMAKE_BINARY_DIR}/generated/onnx)
  file(MAKE_DIRECTORY ${TT_ONNX_GENERATED})
  add_custom_command(
    OUTPUT ${TT_ONNX_GENERATED}/onnx_ir.pb-c.c ${TT_ONNX_GENERATED}/onnx_ir.pb-c.h
    COMMAND ${TT_PROTOC_C} --c_out=${TT_ONNX_GENERATED} -I${CMAKE_SOURCE_DIR}/src/deploy
            ${CMAKE_SOURCE_DIR}/src/deploy/onnx_ir.proto
    DEPENDS ${CMAKE_SOURCE_DIR}/src/deploy/onnx_ir.proto
    COMMENT "protoc-c src/deploy/onnx_ir.proto"
    VERBATIM)
  list(REMOVE_ITEM TT_DEPLOY_SOURCES ${CMAKE_SOURCE_DIR}/src/deploy/onnx_off.c)
  add_library(tiletrain_deploy STATIC ${TT_DEPLOY_SOURCES} ${TT_ONNX_GENERATED}/onnx_ir.pb-c.c)
  target_include_directories(tiletrain_deploy PRIVATE ${TT_ONNX_GENERATED})
  target_link_libraries(tiletrain_deploy PUBLIC tiletrain_lib PRIVATE PkgConfig::PROTOBUF_C)
  message(STATUS "tiletrain: ONNX export with protobuf-c ${PROTOBUF_C_VERSION}")
else()
  list(FILTER TT_DEPLOY_SOURCES INCLUDE REGEX "/onnx_(off|options)\\.c$")
  add_library(tiletrain_deploy STATIC ${TT_DEPLOY_SOURCES})
  target_link_libraries(tiletrain_deploy PUBLIC tiletrain_lib)
  message(STATUS "tiletrain: no ONNX export (TT_ONNX=${TT_ONNX}, protobuf-c found: "
                 "${PROTOBUF_C_FOUND}); `tiletrain export` says how to get it")
endif()

# tools/onnx_verify.py inside the command, for `export --verify`
set(TT_ONNX_VERIFY_C ${CMAKE_BINARY_DIR}/generated/onnx_verify_py.c)
add_custom_command(
  OUTPUT ${TT_ONNX_VERIFY_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${TT_ONNX_VERIFY_C} -DNAME=tt_onnx_verify_py
          -DFILE=${CMAKE_SOURCE_DIR}/tools/onnx_verify.py -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/onnx_verify.py ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
  COMMENT "Embedding tools/onnx_verify.py"
  VERBATIM)
target_sources(tiletrain PRIVATE ${TT_ONNX_VERIFY_C})
target_link_libraries(tiletrain PRIVATE tiletrain_deploy)
