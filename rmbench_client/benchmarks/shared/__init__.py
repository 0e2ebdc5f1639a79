"""Pure pieces several benchmarks share: bootstrap intervals, paired significance, style-bias matrices, step rules,
tables, sample-line fields and record readers. Imports only the leaves; benchmark folders and kinds import it."""
