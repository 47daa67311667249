#pragma once
// chorus-bench sub-commands, one file each. Each gets argv with argv[1] == its name and
// returns the process exit status. Global names, as the other bench files declare them.
int bench_cpu(int argc, char** argv);    // CPU kernels and forward pass
int bench_synth(int argc, char** argv);  // synthetic models
int bench_run(int argc, char** argv);    // the engine end to end, batched vs solo
