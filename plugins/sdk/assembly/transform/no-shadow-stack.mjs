// An asc transform (listed in the SDK's asconfig.json, `transform`): turns off
// AssemblyScript's shadow stack. asc turns it on for any runtime given by path, which is how the
// SDK's arena runtime is selected, because it cannot know that runtime never collects. The
// shadow stack exists only so a collector can find references held in locals: every function
// holding one then spilled it to a stack frame in linear memory, zeroed with memory.fill on
// entry (a bulk-memory call, not inlined by the engines), which cost more than the transforms
// themselves. The arena frees nothing until the next call begins, so no root needs finding.
export default class NoShadowStack {
  afterInitialize(program) {
    program.options.stackSize = 0;
    program.module.useShadowStack = false;
  }
}
