from fakepod.cli import main

main()
