from mlprep.cli import main

main()
