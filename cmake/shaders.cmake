# The Vulkan shaders: every shaders/<program>/<kernel>.comp compiled by
# glslc twice, to build/shaders/<program>/<kernel>.spv (buffers bound as
# storage-buffer bindings) and <kernel>.addressed.spv (-DTT_ADDRESSED=1:
# buffers reached through device addresses, shaders/common.glsl); any glslc
# warning fails the build, and so does a shader that indexes a buffer
# without TT_B() (its addressed compile has no such array); -g keeps the
# OpName of each specialization constant, which the backend reads, and -O
# alone strips.  Both are embedded into the library as uint32_t words by
# cmake/embed_shaders.cmake.  Sets TT_SHADERS_EMBEDDED_C, the generated
# source to add to the library.  TT_SHADER_DIR=build/shaders loads the
# compiled files instead of the embedded copies.
find_package(Vulkan COMPONENTS glslc)
if(NOT Vulkan_FOUND OR NOT Vulkan_glslc_FOUND)
  message(FATAL_ERROR "TT_VULKAN=ON needs the Vulkan loader and headers and glslc: "
    "apt-get install libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers "
    "(tools/deps.sh does), or configure with -DTT_VULKAN=OFF")
endif()

file(GLOB TT_SHADER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/shaders/*/*.comp)
file(GLOB TT_SHADER_INCLUDES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/shaders/*.glsl
  ${CMAKE_SOURCE_DIR}/shaders/*/*.glsl)
list(SORT TT_SHADER_SOURCES)
set(TT_SPIRV_FILES)
set(TT_SHADER_NAMES)
foreach(src ${TT_SHADER_SOURCES})
  get_filename_component(kernel ${src} NAME_WE)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(program ${dir} NAME)
  foreach(variant bound addressed)
    if(variant STREQUAL "bound")
      set(name ${program}/${kernel})
      set(define)
    else()
      set(name ${program}/${kernel}.addressed)
      set(define -DTT_ADDRESSED=1)
    endif()
    set(spv ${CMAKE_BINARY_DIR}/shaders/${name}.spv)
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/shaders/${program}
      COMMAND ${Vulkan_GLSLC_EXECUTABLE} -fshader-stage=compute --target-env=vulkan1.2 -O -g
              -Werror ${define} -I ${CMAKE_SOURCE_DIR}/shaders -o ${spv} ${src}
      DEPENDS ${src} ${TT_SHADER_INCLUDES}
      COMMENT "glslc shaders/${program}/${kernel}.comp (${variant})"
      VERBATIM)
    list(APPEND TT_SPIRV_FILES ${spv})
    list(APPEND TT_SHADER_NAMES ${name})
  endforeach()
endforeach()

set(TT_SHADERS_EMBEDDED_C ${CMAKE_BINARY_DIR}/generated/shaders_embedded.c)
string(REPLACE ";" "," TT_SHADER_NAME_LIST "${TT_SHADER_NAMES}")
add_custom_command(
  OUTPUT ${TT_SHADERS_EMBEDDED_C}
  COMMAND ${CMAKE_COMMAND} -DOUT=${TT_SHADERS_EMBEDDED_C} -DDIR=${CMAKE_BINARY_DIR}/shaders
          -DNAMES=${TT_SHADER_NAME_LIST} -P ${CMAKE_SOURCE_DIR}/cmake/embed_shaders.cmake
  DEPENDS ${TT_SPIRV_FILES} ${CMAKE_SOURCE_DIR}/cmake/embed_shaders.cmake
  COMMENT "Embedding SPIR-V shaders"
  VERBATIM)
