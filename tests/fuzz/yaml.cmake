# libFuzzer target for the config reader (agent/config/: yaml_load.c,
# config.c).  mini_fuzz comes from tests/fuzz/fuzz.cmake (clang with
# MINI_FUZZ only); the sources are compiled into the fuzzer with its
# instrumentation.
if(COMMAND mini_fuzz AND TARGET miniagent_config)
  mini_fuzz(fuzz_yaml SOURCE ${CMAKE_CURRENT_LIST_DIR}/fuzz_yaml.c
            CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/yaml
            DICT ${CMAKE_CURRENT_LIST_DIR}/yaml.dict)
  get_target_property(MINI_CONFIG_SOURCES miniagent_config SOURCES)
  get_target_property(MINI_CONFIG_DIR miniagent_config SOURCE_DIR)
  list(TRANSFORM MINI_CONFIG_SOURCES PREPEND ${MINI_CONFIG_DIR}/)
  target_sources(fuzz_yaml PRIVATE ${MINI_CONFIG_SOURCES})
  target_include_directories(fuzz_yaml PRIVATE ${PROJECT_SOURCE_DIR}/agent)
  target_compile_definitions(fuzz_yaml PRIVATE MINI_CONFIG_SOURCE_DIR="${PROJECT_SOURCE_DIR}/agent/configs")
  target_link_libraries(fuzz_yaml PRIVATE PkgConfig::CJSON PkgConfig::YAML m)
endif()
