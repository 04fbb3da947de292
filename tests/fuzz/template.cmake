# libFuzzer target for the template engine (agent/template/), built like
# fuzz_frame (tests/fuzz/fuzz.cmake defines mini_fuzz); the engine's sources
# are compiled into the fuzzer with its instrumentation.
if(COMMAND mini_fuzz AND TARGET miniagent_template)
  mini_fuzz(fuzz_template SOURCE ${CMAKE_CURRENT_LIST_DIR}/fuzz_template.c
            CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/template
            DICT ${CMAKE_CURRENT_LIST_DIR}/template.dict)
  get_target_property(MINI_TPL_SOURCES miniagent_template SOURCES)
  get_target_property(MINI_TPL_DIR miniagent_template SOURCE_DIR)
  list(TRANSFORM MINI_TPL_SOURCES PREPEND ${MINI_TPL_DIR}/)
  target_sources(fuzz_template PRIVATE ${MINI_TPL_SOURCES})
  target_include_directories(fuzz_template PRIVATE ${PROJECT_SOURCE_DIR}/agent)
  target_link_libraries(fuzz_template PRIVATE PkgConfig::CJSON m)
endif()
